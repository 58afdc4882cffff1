"""Offline lists the corpus stages join against: registered domains (the public suffix list bundled
in the ``publicsuffixlist`` package) and a user's URL block list (stop words: :mod:`pipeline.corpus.signals`).

Only distinct hosts pass through Python (``mapInArrow``, one PSL per worker); documents are
joined to the result in Spark.
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache
from pathlib import Path
from typing import Iterator

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from pipeline.config import ConfigError


@lru_cache(maxsize=1)
def _public_suffix_list():
    from publicsuffixlist import PublicSuffixList

    return PublicSuffixList()  # the list shipped inside the package: no network


def registered_domain(host: str | None) -> str | None:
    """eTLD+1 of a host (``www.bbc.co.uk`` -> ``bbc.co.uk``); an IP address or a bare suffix is itself."""
    if not host:
        return None
    host = host.strip(".").lower()
    try:
        ipaddress.ip_address(host.strip("[]"))
        return host
    except ValueError:
        pass
    return _public_suffix_list().privatesuffix(host) or host


def _domains_of_hosts(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        hosts = batch.column(0).to_pylist()
        yield pa.RecordBatch.from_arrays([pa.array(hosts, pa.string()),
                                          pa.array([registered_domain(h) for h in hosts], pa.string())],
                                         names=["host", "registered_domain"])


def with_domains(docs: DataFrame) -> DataFrame:
    """Add ``host`` (lower-cased, from ``url``) and ``registered_domain`` (``host`` when it has none)."""
    docs = docs.withColumn("host", F.lower(F.try_parse_url(F.col("url"), F.lit("HOST"))))
    hosts = docs.select("host").where(F.col("host").isNotNull()).distinct()
    domains = hosts.mapInArrow(_domains_of_hosts, "host string, registered_domain string")
    joined = docs.join(domains, "host", "left")
    return joined.withColumn("registered_domain", F.coalesce("registered_domain", "host", F.lit("")))


def read_blocklist(path: str | None) -> list[str]:
    """Hosts or registered domains from a user's file, one a line, ``#`` comments; a bad path is a ConfigError."""
    if path is None:
        return []
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"corpus.quality.url_blocklist {path}: {exc.strerror}") from None
    entries = (line.split("#", 1)[0].strip().lower().strip(".") for line in text.splitlines())
    return sorted({entry for entry in entries if entry})
