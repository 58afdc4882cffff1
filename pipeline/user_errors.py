"""What every command shares: the error a user can fix, the one line it is told in, and the argument parser whose
errors are that line."""

from __future__ import annotations

import argparse
import sys

from pipeline.redact import redact_text

EXIT_USAGE = 2  # a user's mistake: a usage, config, input or output-directory error (README, "Exit statuses")


class UsageError(Exception):
    """A problem the user can fix; printed as one line, without a traceback."""


def error_line(message: str) -> str:
    """The one line a user's mistake is told in, with any secret in it masked."""
    return f"warcplex: error: {redact_text(message)}"


def print_error(message: str) -> int:
    """Print :func:`error_line` to stderr; the exit status a command then ends with (2)."""
    print(error_line(message), file=sys.stderr)
    return EXIT_USAGE


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (no usage dump)."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(EXIT_USAGE, error_line(f"{message} (see {self.prog} --help)") + "\n")
