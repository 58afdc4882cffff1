"""``warcplex nightly``: an idempotent, resumable corpus build over a crawl's shard list.

    warcplex nightly --crawl CC-MAIN-2024-22 --output s3://bucket/corpus [--max-shards N]
    warcplex nightly --manifest warc.paths.gz --output DIR

The shard list is ``<base>/crawl-data/<crawl>/warc.paths.gz`` (base ``input.base_url``, e.g.
https://data.commoncrawl.org/ or s3://commoncrawl/) or any manifest. Every run processes the
shards whose splits have no completion marker yet (at most ``--max-shards`` new ones), and
re-lists the finished ones, which are skipped from their markers, so ``stats.json`` and
``_SUCCESS`` always describe the whole corpus built so far. Output names depend only on the
shard URI and ``input.splits_per_shard``, so a run killed at any point and rerun produces the
same bytes. A failed Spark job (after ``spark.task.maxFailures`` task attempts) is run again
up to ``--attempts`` times, and so is a job that left shards unread (exit status 3: missing, throttled past
every retry, not a WARC, WET or ARC file); each attempt skips what the previous one finished, and the summary
names the shards still unread.
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
from typing import Callable

from pipeline.config import load_settings
from pipeline.reading.reader import plan_splits
from pipeline.reading.shards import Shard
from pipeline.reading.sources import resolve_shards
from pipeline.redact import redact_text
from pipeline.spark.exits import (EXIT_FAILED, EXIT_FAILED_SHARDS, EXIT_OK, USER_ERRORS, exit_status, setup_logging,
                                  user_error)
from pipeline.spark.job import CleanWarcJob
from pipeline.user_errors import EXIT_USAGE, UsageError
from pipeline.writing.output import OutputTarget

log = logging.getLogger("warcplex.nightly")

CRAWL_ID = re.compile(r"^CC-MAIN-\d{4}-\d{2}$")
DEFAULT_BASE_URL = "https://data.commoncrawl.org/"
DEFAULT_CONFIG = "conf/nightly.yaml"


def crawl_manifest(crawl: str, base_url: str | None) -> str:
    """The URI of a Common Crawl crawl's ``warc.paths.gz``."""
    if not CRAWL_ID.match(crawl):
        raise UsageError(f"--crawl {crawl!r}: expected a crawl id like CC-MAIN-2024-22")
    return (base_url or DEFAULT_BASE_URL).rstrip("/") + f"/crawl-data/{crawl}/warc.paths.gz"


def plan(shards: list[Shard], done: set[str], settings, max_shards: int | None) -> tuple[list[Shard], list[Shard]]:
    """Split the shard list into (finished shards, shards to process now), in manifest order."""
    finished, pending = [], []
    for shard in shards:
        ids = {split.split_id for split in plan_splits([shard], settings.input, settings.s3,
                                                       settings.input.splits_per_shard)}
        (finished if ids <= done else pending).append(shard)
    if max_shards is not None:
        pending = pending[:max_shards]
    return finished, pending


def add_parser(commands, job_factory: Callable[[], CleanWarcJob] = CleanWarcJob) -> None:
    parser = commands.add_parser("nightly", help="process a crawl's new shards into a corpus, idempotently",
                                 description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--crawl", help="Common Crawl crawl id, e.g. CC-MAIN-2024-22")
    source.add_argument("--manifest", help="a warc.paths(.gz) manifest: local path, s3:// or https://")
    parser.add_argument("--base-url", help=f"where crawl-data/ lives (input.base_url, default {DEFAULT_BASE_URL}); "
                        "relative manifest paths resolve against it too")
    parser.add_argument("--output", required=True, help="corpus directory (local path or s3://bucket/prefix)")
    parser.add_argument("--config", default=DEFAULT_CONFIG, help=f"YAML preset (default {DEFAULT_CONFIG})")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override one config key")
    parser.add_argument("--max-shards", type=int, help="process at most this many new shards in this run")
    parser.add_argument("--attempts", type=int, default=2, help="runs of the Spark job before giving up (default 2)")
    parser.add_argument("--dry-run", action="store_true", help="print the plan, process nothing")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace an earlier build's output (its own files only), e.g. after a config change")
    parser.set_defaults(handler=lambda args: run(args, job_factory))


def run(args: argparse.Namespace, job_factory: Callable[[], CleanWarcJob] = CleanWarcJob) -> int:
    """The ``nightly`` command: 0 done, 1 the job failed after every attempt, 2 a usage error,
    3 done but some shards could not be read (they are retried by the next run)."""
    setup_logging()
    try:
        if args.max_shards is not None and args.max_shards < 1:
            raise UsageError("--max-shards must be at least 1")
        if args.attempts < 1:
            raise UsageError("--attempts must be at least 1")
        overrides = list(args.set) + ([f"input.base_url={args.base_url}"] if args.base_url else [])
        settings = load_settings(args.config, overrides)
        if settings.input.splits_per_shard < 1:
            raise UsageError("nightly needs a fixed input.splits_per_shard (>= 1), so split ids do not depend "
                             "on the machine's cores")
        manifest = args.manifest or crawl_manifest(args.crawl, settings.input.base_url)
        shards = resolve_shards([manifest], settings.s3, settings.input.base_url)
        if not shards:
            raise UsageError(f"{manifest}: the manifest lists no shards")
        done = set() if args.overwrite else OutputTarget(args.output, settings.s3).finished_split_ids()
        finished, pending = plan(shards, done, settings, args.max_shards)
    except (UsageError, *USER_ERRORS) as exc:
        print(user_error(exc), file=sys.stderr)
        return EXIT_USAGE
    remaining = len(shards) - len(finished) - len(pending)
    print(f"warcplex nightly: {len(shards)} shards in {manifest}; {len(finished)} done, "
          f"{len(pending)} to process now, {remaining} left for later runs", flush=True)
    if args.dry_run:
        for shard in pending:
            print(f"  {redact_text(shard.uri)}")
        return EXIT_OK
    if not pending:
        return EXIT_OK
    job = job_factory()
    argv = ["--input", manifest, "--output", args.output, "--config", args.config]
    for assignment in overrides:
        argv += ["--set", assignment]
    job_args = job.build_parser().parse_args(argv + (["--overwrite"] if args.overwrite else []))
    for attempt in range(1, args.attempts + 1):
        try:
            stats = job.run(job_args, shards=[*finished, *pending])
        except Exception as exc:
            line = user_error(exc)
            if line is not None:  # another attempt would meet the same mistake
                print(line, file=sys.stderr)
                return EXIT_USAGE
            # a Spark job failure: rerun; finished splits are skipped
            log.error("nightly attempt %d of %d failed: %s", attempt, args.attempts,
                      str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
            job_args.overwrite = False  # the next attempt keeps what this one finished
            continue
        status = exit_status(stats)
        if status == EXIT_FAILED_SHARDS and attempt < args.attempts:
            # Shards that could not be read (throttling, a file still being written) get another attempt now;
            # every other shard is skipped from its marker.
            log.warning("nightly attempt %d of %d: %d split(s) could not be read; trying them again", attempt,
                        args.attempts, stats["run"]["splits_failed"])
            job_args.overwrite = False
            continue
        print(job.summary(stats))
        return status
    return EXIT_FAILED
