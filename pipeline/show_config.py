"""``warcplex config``: print the effective configuration as YAML, secrets redacted.

The configuration is built as ``warcplex run`` builds it (:func:`pipeline.config.load_settings`): the
built-in defaults, then the ``--config`` preset, then each ``--set key=value``. Every value goes through
:func:`pipeline.redact.redact` before it is printed. A bad key, value or file ends with one line and exit
status 2.
"""

from __future__ import annotations

import argparse
import sys

import yaml

from pipeline.config import ConfigError, load_settings
from pipeline.redact import redact
from pipeline.user_errors import print_error


def add_parser(commands) -> None:
    parser = commands.add_parser("config", help="print the effective configuration (defaults, --config, --set) as YAML",
                                 description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", help="YAML preset, e.g. conf/local.yaml (defaults are built in)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override one config key, e.g. --set perplexity.threshold=5000 (repeatable)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        settings = load_settings(args.config, args.set)
    except ConfigError as exc:
        return print_error(str(exc))
    tree = redact(settings.model_dump(mode="json"))
    sys.stdout.write(yaml.safe_dump(tree, sort_keys=False, allow_unicode=True, width=120))
    return 0
