"""The ``warcplex`` command: ``run`` the cleaning job (more subcommands register here)."""

from __future__ import annotations

import argparse
import sys

from pipeline.job import CleanWarcJob, run_cli


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="warcplex", description="Perplexity-filtered text corpora from WARC files.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    job = CleanWarcJob()
    run = commands.add_parser("run", help=job.description, description=job.description)
    job.build_parser(run)
    run.set_defaults(handler=lambda args: run_cli(job, args))
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
