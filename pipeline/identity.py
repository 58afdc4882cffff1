"""What a shard, a split and a run's configuration *are*, independent of where they are read from.

A shard's key is its path relative to the root it was found under: the line of a
``warc.paths`` manifest as written (so ``--base-url`` does not matter), the path under a
directory or glob root, the bare file name of a single file, the object key of an
``s3://bucket/key`` or the path of an ``https://`` URL. A local shard's size is part of the
key, so a different file under the same name is a different shard. Split ids (output file
names, completion markers) derive from the key alone: the same shard moved, copied, reached
through a symlink or a changed base URL is recognised as done.

The config fingerprint hashes the settings that change what a run writes, and the page rows' columns;
Spark, S3, paths of side outputs, carbon and index settings do not count.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from pipeline.config import Settings, resolve_path


@dataclass(frozen=True)
class Shard:
    """One input file: where it is read from (``uri``) and what it is (``key``)."""

    uri: str
    key: str


def _with_size(path: str, relative: str) -> str:
    try:
        return f"{relative}@{os.path.getsize(path)}"
    except OSError:  # missing: the read fails and the split is retried with its real size later
        return relative


def shard_key(uri: str, root: str | None = None, relative: str | None = None) -> str:
    """The key of the shard at ``uri``: ``relative`` (as a manifest wrote it) or the path under ``root``."""
    if uri.startswith("s3://"):
        return relative or uri[len("s3://"):].partition("/")[2]
    if uri.startswith(("https://", "http://")):
        return relative or urlsplit(uri).path.lstrip("/")
    if relative is None:
        relative = os.path.relpath(uri, root) if root else os.path.basename(uri)
    return _with_size(uri, relative.replace(os.sep, "/").lstrip("/"))


# Settings that do not change the corpus written to the output (its data and markers).
_NOT_OUTPUT = {"spark": None, "s3": None, "carbon": None, "index": None,
               "input": {"base_url"}, "extract": {"worker_max_rss_mb"},
               "output": {"dropped", "sentences", "resume", "explain_sample"}}
# Settings that name a file: the fingerprint takes the file's name and size, not its location.
_FILE_SETTINGS = {("extract", "blocks_model"), ("langid", "model_path")}


def _file_identity(path: str | None) -> str | None:
    if not path:
        return path
    resolved = resolve_path(path)
    try:
        return f"{resolved.name}@{resolved.stat().st_size}"
    except OSError:
        return resolved.name


def fingerprinted_settings(settings: Settings) -> dict[str, Any]:
    """The settings that change the output, with files by name and size and the registry by content."""
    tree = settings.model_dump(mode="json")
    kept: dict[str, Any] = {}
    for section, values in tree.items():
        if section in _NOT_OUTPUT and _NOT_OUTPUT[section] is None:
            continue
        excluded = _NOT_OUTPUT.get(section) or set()
        kept[section] = {k: (_file_identity(v) if (section, k) in _FILE_SETTINGS else v)
                         for k, v in values.items() if k not in excluded}
    if settings.perplexity.enabled:
        registry = resolve_path(settings.perplexity.registry)
        try:
            kept["perplexity"]["registry"] = hashlib.sha256(registry.read_bytes()).hexdigest()[:16]
        except OSError:
            pass  # model_files() reports a missing registry
    else:
        kept["perplexity"]["registry"] = None
    # The page rows' columns: an output written by a warcplex with other columns is not resumed into.
    from pipeline.writing.rows import PAGE_SCHEMA  # (rows -> document -> reading.warc imports this module)

    kept.setdefault("output", {})["page_columns"] = PAGE_SCHEMA.names
    return kept


def config_fingerprint(settings: Settings) -> str:
    """A short hash of :func:`fingerprinted_settings`."""
    canonical = json.dumps(fingerprinted_settings(settings), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def settings_difference(old: dict[str, Any], new: dict[str, Any], limit: int = 3) -> str:
    """The first differing keys of two fingerprinted settings trees, e.g. ``perplexity.threshold: 500 -> 800``."""
    changes = []
    for section in sorted(set(old) | set(new)):
        a, b = old.get(section) or {}, new.get(section) or {}
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                changes.append(f"{section}.{key}: {json.dumps(a.get(key))} -> {json.dumps(b.get(key))}")
    shown = "; ".join(changes[:limit])
    return shown + (f" (+{len(changes) - limit} more)" if len(changes) > limit else "")
