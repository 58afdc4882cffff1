"""Duplicate WARC-Record-IDs across inputs: which split keeps a record, decided before processing.

Every split's response record ids are listed once (``_ids/<split_id>.ids`` in the output,
gzip-compressed lines; the name has no ``.gz`` so that pyarrow does not decompress it itself;
a new split is scanned, a listed one is read back). Spark groups the ids; an id held by more
than one split stays with the winner: a finished split (it has a completion marker) before
an unfinished one, then the earlier split in plan order. The others get the id in their
skip set and count the record as ``skip.duplicate_record_id``. The decision depends only on
the plan and what is already in the output, so it is the same in every task and every rerun.
Duplicates inside one split are dropped by the reader (the first occurrence stays).
"""

from __future__ import annotations

import gzip
from typing import Any

from fastwarc.warc import WarcRecordType

from pipeline.config import S3Settings
from pipeline.writing.output import OutputTarget
from pipeline.stats import Stats
from pipeline.reading.warc import ShardReadError, Split, iter_records

IDS_DIR = "_ids"


def scan_response_ids(split: Split, s3: S3Settings) -> list[str] | None:
    """The distinct response record ids of a split in file order; None when the shard cannot be read."""
    ids: dict[str, None] = {}
    try:
        for record in iter_records(split, s3, Stats()):
            if record.record_type == WarcRecordType.response:
                ids.setdefault(record.record_id or "", None)
    except ShardReadError:
        return None
    return list(ids)


def split_response_ids(split: Split, output: str, s3: S3Settings) -> list[str]:
    """The split's response ids from its ``_ids/`` listing, scanning (and listing) it the first time."""
    target = OutputTarget(output, s3)
    name = f"{IDS_DIR}/{split.split_id}.ids"
    listed = target.read_bytes(name)
    if listed is not None:
        text = gzip.decompress(listed).decode("utf-8")
        return text.split("\n") if text else []
    ids = scan_response_ids(split, s3)
    if ids is None:
        return []  # the main pass fails this split; it is listed when it can be read
    target.write_bytes(name, gzip.compress("\n".join(ids).encode("utf-8"), mtime=0))
    return ids


def duplicate_skip_sets(sc: Any, splits: list[Split], finished: set[str], output: str,
                        s3: S3Settings) -> dict[str, frozenset[str]]:
    """Split id -> the record ids it must skip because a winning split holds them (one Spark job)."""
    if len(splits) < 2:
        return {}
    ranked = [((0 if split.split_id in finished else 1, order), split) for order, split in enumerate(splits)]
    losers = (sc.parallelize(ranked, len(ranked))
              .flatMap(lambda item: ((record_id, item[0]) for record_id in split_response_ids(item[1], output, s3)))
              .groupByKey()
              .flatMap(lambda group: ((rank, group[0]) for rank in sorted(group[1])[1:]))
              .groupByKey()
              .mapValues(frozenset)
              .collectAsMap())
    by_rank = dict(ranked)
    return {by_rank[rank].split_id: ids for rank, ids in losers.items()}
