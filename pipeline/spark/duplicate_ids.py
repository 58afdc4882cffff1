"""Duplicate WARC-Record-IDs across inputs: which split keeps a record, decided before processing.

Every split's page record ids (:meth:`~pipeline.reading.reader.Reader.record_ids`) are listed once (``_ids/<split_id>.ids`` in the output,
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

from pipeline.config import InputSettings, S3Settings
from pipeline.reading.reader import split_record_ids
from pipeline.reading.shards import Split
from pipeline.writing.output import OutputTarget

IDS_DIR = "_ids"


def listed_record_ids(split: Split, output: str, settings: InputSettings, s3: S3Settings) -> list[str]:
    """The split's page record ids from its ``_ids/`` listing, read by its reader (and listed) the first time."""
    target = OutputTarget(output, s3)
    name = f"{IDS_DIR}/{split.split_id}.ids"
    listed = target.read_bytes(name)
    if listed is not None:
        text = gzip.decompress(listed).decode("utf-8")
        return text.split("\n") if text else []
    ids = split_record_ids(split, settings, s3)
    if ids is None:
        return []  # the main pass fails this split; it is listed when it can be read
    target.write_bytes(name, gzip.compress("\n".join(ids).encode("utf-8"), mtime=0))
    return ids


def duplicate_skip_sets(sc: Any, splits: list[Split], finished: set[str], output: str, settings: InputSettings,
                        s3: S3Settings) -> dict[str, frozenset[str]]:
    """Split id -> the record ids it must skip because a winning split holds them (one Spark job)."""
    if len(splits) < 2:
        return {}
    ranked = [((0 if split.split_id in finished else 1, order), split) for order, split in enumerate(splits)]
    losers = (sc.parallelize(ranked, len(ranked))
              .flatMap(lambda item: ((record_id, item[0]) for record_id in listed_record_ids(item[1], output, settings, s3)))
              .groupByKey()
              .flatMap(lambda group: ((rank, group[0]) for rank in sorted(group[1])[1:]))
              .groupByKey()
              .mapValues(frozenset)
              .collectAsMap())
    by_rank = dict(ranked)
    return {by_rank[rank].split_id: ids for rank, ids in losers.items()}
