"""Offline lists the corpus stages join against: registered domains (the public suffix list bundled
in the ``publicsuffixlist`` package) and a user's URL block list (stop words: :mod:`pipeline.corpus.signals`).

The corpus input's ``host`` and ``registered_domain`` are added by the task that reads the documents
(:func:`with_domain_columns`), one PSL per worker.
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache
from pathlib import Path
from urllib.parse import urlsplit

import pyarrow as pa
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


def url_host(url: str | None) -> str | None:
    """The lower-cased host of a URL (an IPv6 literal keeps its brackets); None when it has none or does not parse."""
    if not url:
        return None
    try:
        authority = urlsplit(url).netloc
    except ValueError:  # an unbalanced IPv6 bracket
        return None
    host = authority.rpartition("@")[2]
    host = host[:host.find("]") + 1] if host.startswith("[") else host.partition(":")[0]
    return host.lower() or None


@lru_cache(maxsize=1 << 16)
def _host_and_domain(url: str | None) -> tuple[str | None, str]:
    host = url_host(url)
    return host, registered_domain(host) or host or ""


def with_domain_columns(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` (with a ``url`` column) as the corpus input: ``host`` first, then its columns, then
    ``registered_domain`` (the host's, ``host`` when it has none, else "") and ``lines_removed`` (0)."""
    pairs = [_host_and_domain(url) for url in batch.column(batch.schema.get_field_index("url")).to_pylist()]
    hosts = pa.array([host for host, _ in pairs], pa.string())
    domains = pa.array([domain for _, domain in pairs], pa.string())
    return pa.RecordBatch.from_arrays([hosts, *batch.columns, domains, pa.array([0] * batch.num_rows, pa.int32())],
                                      names=["host", *batch.schema.names, "registered_domain", "lines_removed"])


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
