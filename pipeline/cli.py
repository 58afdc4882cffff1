"""The ``warcplex`` command: ``run`` the cleaning job, ``nightly``, ``calibrate``, ``sweep``, ``report``, ``train-lm``,
``explain``.

``run`` is the composition root: the Spark cleaning job (runtime) with the analysis after it
(:func:`pipeline.analysis.extensions.run_extensions`).
"""

from __future__ import annotations

import argparse
import sys

from pipeline import show_config
from pipeline.analysis import calibrate, report, sweep
from pipeline.analysis.extensions import run_extensions
from pipeline.corpus.job_extension import CorpusStages
from pipeline.explain import command as explain
from pipeline.lm import train as train_lm
from pipeline.lm.selftrain import SelfTrainingJob
from pipeline.spark import nightly
from pipeline.spark.exits import run_cli
from pipeline.spark.job import CleanWarcJob
from pipeline.user_errors import OneLineParser


def clean_warc_job() -> CleanWarcJob:
    """The cleaning job (two passes around a model training where the settings say ``self-train``), its corpus stages,
    and the run-level analysis composed after it."""
    return SelfTrainingJob([CorpusStages(), *run_extensions()])


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="warcplex", description="Perplexity-filtered text corpora from WARC files.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=OneLineParser)
    job = clean_warc_job()
    run = commands.add_parser("run", help=job.description, description=job.description)
    job.build_parser(run)
    run.set_defaults(handler=lambda args: run_cli(job, args))
    show_config.add_parser(commands)
    calibrate.add_parser(commands)
    nightly.add_parser(commands, clean_warc_job)
    sweep.add_parser(commands)
    explain.add_parser(commands)
    report.add_parser(commands)
    train_lm.add_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.handler(args)


def spark_submit_main(argv: list[str] | None = None) -> int:
    """``spark-submit jobs/clean_warc.py``: the flags of ``warcplex run``."""
    return clean_warc_job().main(argv)


if __name__ == "__main__":
    sys.exit(main())
