"""What a shard and a split *are*, independent of where they are read from.

A split is a byte range of one shard, the unit of work of one Spark task (a reader plans them,
:meth:`~pipeline.reading.reader.Reader.plan`).

A shard's key is its path relative to the root it was found under: the line of a
``warc.paths`` manifest as written (so ``--base-url`` does not matter), the path under a
directory or glob root, the bare file name of a single file, the object key of an
``s3://bucket/key`` or the path of an ``https://`` URL. A local shard's size is part of the
key, so a different file under the same name is a different shard. Split ids (output file
names, completion markers) derive from the key alone: the same shard moved, copied, reached
through a symlink or a changed base URL is recognised as done.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit


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


@dataclass(frozen=True)
class Split:
    """A byte range ``[start, end)`` of a shard; ``end`` None means to the end of the shard."""

    uri: str
    index: int
    count: int
    start: int = 0
    end: int | None = None
    # The shard's key (:func:`shard_key`); empty: derived from ``uri`` as for a single file.
    shard_key: str = field(default="", compare=False)
    # The name of the reader that planned it (pipeline.reading.reader); empty: the one the file's name chooses.
    reader: str = field(default="", compare=False)

    @property
    def split_id(self) -> str:
        """Deterministic id used in output file names and completion markers: from the shard's
        key, never its location."""
        key = self.shard_key or shard_key(self.uri)
        digest = hashlib.sha1(key.encode("utf-8")).hexdigest()[:8]
        stem = re.sub(r"[^A-Za-z0-9._-]+", "_", os.path.basename(self.shard_name.rstrip("/")))[:80]
        return f"{stem}-{digest}-{self.index:03d}of{self.count:03d}"

    @property
    def shard_name(self) -> str:
        """The shard's key without its size: the ``warc_filename`` of its rows (never a local location)."""
        return re.sub(r"@\d+$", "", self.shard_key or shard_key(self.uri))
