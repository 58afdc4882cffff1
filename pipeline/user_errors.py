"""What every command shares: the error a user can fix, and the argument parser whose errors are one line."""

from __future__ import annotations

import argparse


class UsageError(Exception):
    """A problem the user can fix; printed as one line, without a traceback."""


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (no usage dump)."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"warcplex: error: {message} (see {self.prog} --help)\n")
