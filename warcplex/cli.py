"""The ``warcplex`` command: ``run`` the cleaning job, ``calibrate``, ``sweep``, ``report``."""

from __future__ import annotations

import argparse
import sys

from warcplex.analysis import calibrate, report, sweep
from warcplex.spark import nightly
from warcplex.spark.job import CleanWarcJob, OneLineParser, run_cli


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="warcplex", description="Perplexity-filtered text corpora from WARC files.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=OneLineParser)
    job = CleanWarcJob()
    run = commands.add_parser("run", help=job.description, description=job.description)
    job.build_parser(run)
    run.set_defaults(handler=lambda args: run_cli(job, args))
    calibrate.add_parser(commands)
    nightly.add_parser(commands)
    sweep.add_parser(commands)
    report.add_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
