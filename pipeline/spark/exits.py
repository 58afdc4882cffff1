"""How a run ends: its exit statuses, the one-line errors of a user's mistake, the logging a run sets up."""

from __future__ import annotations

import argparse
import logging
import re
import sys
import warnings
from typing import Any, Protocol

from pipeline.config import ConfigError
from pipeline.reading.reader import pages_read
from pipeline.reading.sources import InputError
from pipeline.redact import install_log_redaction
from pipeline.stats import Stats
from pipeline.user_errors import EXIT_USAGE, UsageError, error_line, print_error
from pipeline.writing.outdir import OutputError

# Exit statuses of `warcplex run` and `warcplex nightly` (README, "Exit statuses").
EXIT_OK, EXIT_FAILED, EXIT_FAILED_SHARDS = 0, 1, 3  # and EXIT_USAGE, 2, the user's mistake (user_errors)
USER_ERRORS = (ConfigError, InputError, OutputError)

WAT_MESSAGE = ("is WAT (JSON metadata records, no page text): warcplex reads WARC files (HTML responses) "
               "and WET files (text); give it the .warc.gz or the .warc.wet.gz of the same segment")


def no_pages_message(stats: dict[str, Any]) -> str | None:
    """What to say when the input held no HTML response and no WET record, else None."""
    records = stats.get("records", {})
    if pages_read(records):
        return None
    skipped = Stats.from_dict({"skip": stats.get("skip", {})}).counts
    kinds = ", ".join(f"{k.removeprefix('skip.')} {v:g}" for k, v in sorted(skipped.items())) or "none"
    return (f"found no HTML response and no WET conversion record in {records.get('read', 0):g} WARC "
            f"records (skipped: {kinds})")


def quiet_third_party() -> None:
    """Silence known noise: pyspark's pandas-version FutureWarning and py4j's closing INFO line."""
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)
    logging.getLogger("py4j").setLevel(logging.WARNING)


def setup_logging() -> None:
    """INFO logging to stderr with every message redacted, and third-party noise off."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    install_log_redaction()
    quiet_third_party()


def exit_status(stats: dict[str, Any]) -> int:
    """0 when every split was read, 3 when some shards could not be (they are retried next run)."""
    return EXIT_FAILED_SHARDS if stats["run"].get("splits_failed") else EXIT_OK


class RunnableJob(Protocol):
    """What :func:`run_cli` runs: a job (:class:`~pipeline.spark.job.WarcJob`) and its summary."""

    def run(self, args: argparse.Namespace) -> dict[str, Any]: ...

    def summary(self, stats: dict[str, Any]) -> str: ...


# Spark's error class for a property whose value it cannot read (``spark.python.worker.reuse: maybe``), which it
# finds only when a task reads the property: `[INVALID_CONF_VALUE.TYPE_MISMATCH] The value 'maybe' in the config ...`.
REFUSED_PROPERTY = re.compile(r"\[INVALID_CONF_VALUE[.\w]*\] ([^\n]*?)(?: SQLSTATE: \w+)?$", re.MULTILINE)


def user_error(exc: BaseException) -> str | None:
    """The one line a user's mistake ends a job with (exit status 2): a usage, config, input or output-directory
    error, or a property's value Spark refuses; None when ``exc`` is not the user's."""
    if isinstance(exc, (UsageError, *USER_ERRORS)):
        return error_line(str(exc))
    refused = REFUSED_PROPERTY.search(str(exc))  # py4j's and Spark's own types
    if refused is None:
        return None
    return error_line(f"Spark refused a property (spark.conf): {refused.group(1).strip()}")


def run_cli(job: RunnableJob, args: argparse.Namespace) -> int:
    """Run a job, turning user errors into one-line messages and exit status 2."""
    setup_logging()
    try:
        stats = job.run(args)
    except Exception as exc:
        line = user_error(exc)
        if line is None:
            raise
        print(line, file=sys.stderr)
        return EXIT_USAGE
    print(job.summary(stats))
    nothing = no_pages_message(stats)
    if nothing:
        metadata_only = set(stats.get("skip", {}).get("not_response", {})) <= {"metadata", "warcinfo"}
        if metadata_only and stats.get("skip", {}).get("not_response", {}).get("metadata"):
            return print_error(f"the input {WAT_MESSAGE}")
        print(f"warcplex: {nothing}", file=sys.stderr)
    return exit_status(stats)
