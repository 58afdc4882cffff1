"""The deterministic page sample of the index statistics, shared by the corpus builder and
:mod:`pipeline.analysis.index_stats`: record ids of the sentence side output in SHA-1 order."""

from __future__ import annotations

import hashlib

import pyarrow as pa

from pipeline.config import S3Settings
from pipeline.writing.output import CORPUS_STATE_DIR, filesystem_for

# The corpus builder's texts of the sampled pages after each stage: (stage, warc_record_id, text).
CORPUS_SAMPLE_DIR = f"{CORPUS_STATE_DIR}/index_sample"


def sample_key(record_id: str) -> bytes:
    return hashlib.sha1(record_id.encode("utf-8")).digest()


def open_dataset(uri: str, s3: S3Settings, what: str):
    """The hive-partitioned Parquet dataset under ``uri``; ValueError naming ``what`` when there is none."""
    # pyarrow.dataset imports pandas: only a run that builds index statistics pays for it
    import pyarrow.dataset as ds

    fs, root = filesystem_for(uri, s3)
    try:
        return ds.dataset(root, filesystem=fs, format="parquet", partitioning="hive", exclude_invalid_files=True)
    except (FileNotFoundError, pa.ArrowInvalid) as exc:
        raise ValueError(f"no {what} under {uri}: {exc}") from None


def sample_record_ids(sentences_uri: str, s3: S3Settings, sample_pages: int) -> list[str]:
    """The record ids of the deterministic sample of ``sample_pages`` pages (all pages when 0)."""
    ids = open_dataset(sentences_uri, s3, "sentence scores").to_table(columns=["warc_record_id"])
    unique = sorted(set(ids.column("warc_record_id").to_pylist()), key=sample_key)
    return unique[:sample_pages] if sample_pages else unique
