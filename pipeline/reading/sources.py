"""Input resolution and byte streams: local files, globs, path manifests, s3:// and https://.

An input spec resolves to shard URIs; an ``s3://bucket/prefix/`` (ending in ``/``) or an S3 glob
(``s3://bucket/warcs/*.warc.gz``, ``**`` for any depth) is listed, every page of the listing, and its
shards sorted by key; a shard opens as a forward-only binary stream. Remote
streams resume after a dropped connection with a ranged request from the byte they reached,
and retry throttling and 5xx answers with exponential backoff and full jitter, so a shard is
read once, whole, without ever being held in memory.
"""

from __future__ import annotations

import fnmatch
import glob
import gzip
import http.client
import io
import logging
import os
import random
import time
import urllib.error
import urllib.request
from typing import Any, Callable

from pipeline.config import S3Settings, check_s3_address
from pipeline.reading.shards import Shard, shard_key

log = logging.getLogger(__name__)

REMOTE_SCHEMES = ("s3://", "https://", "http://")


class InputError(ValueError):
    """An input spec that names nothing readable."""


def is_remote(uri: str) -> bool:
    return uri.startswith(REMOTE_SCHEMES)


def is_manifest(uri: str) -> bool:
    """Common Crawl's ``warc.paths(.gz)`` and any ``*.paths``/``*.txt`` list of paths."""
    name = uri.rsplit("/", 1)[-1]
    return name.endswith((".paths", ".paths.gz", ".txt", ".txt.gz"))


def split_s3_uri(uri: str) -> tuple[str, str]:
    check_s3_address(uri)
    bucket, _, key = uri[len("s3://"):].partition("/")
    if not bucket or not key:
        raise InputError(f"{uri}: expected s3://bucket/key")
    return bucket, key


def _is_shard_name(name: str) -> bool:
    """A file name a directory or an S3 prefix yields as a shard: a WARC (``*.warc*``) or an ARC file."""
    return ".warc" in name or name.endswith((".arc", ".arc.gz"))


def is_s3_listing(spec: str) -> bool:
    """An ``s3://`` spec naming several objects: a prefix ending in ``/`` or a key with a wildcard."""
    return spec.startswith("s3://") and (spec.endswith("/") or glob.has_magic(spec[len("s3://"):]))


def _matches(key: str, pattern: str) -> bool:
    """Glob matching of an object key, segment by segment: ``*``, ``?`` and ``[...]`` stay within one ``/``
    segment, ``**`` matches any number of them."""
    def match(keys: list[str], parts: list[str]) -> bool:
        if not parts:
            return not keys
        if parts[0] == "**":
            return any(match(keys[i:], parts[1:]) for i in range(len(keys) + 1))
        return bool(keys) and fnmatch.fnmatchcase(keys[0], parts[0]) and match(keys[1:], parts[1:])
    return match(key.split("/"), pattern.split("/"))


def _retrying(call: Callable[[], Any], what: str, s3: S3Settings) -> Any:
    """``call()``, retried on throttling and 5xx answers with the read's backoff."""
    for attempt in range(s3.max_attempts):
        try:
            return call()
        except Exception as exc:
            if not _is_transient_botocore(exc) or attempt + 1 == s3.max_attempts:
                raise
            log.warning("%s: %s; retry %d", what, type(exc).__name__, attempt + 1)
            time.sleep(random.uniform(0, min(s3.backoff_max_s, s3.backoff_base_s * 2 ** attempt)))
    raise AssertionError("unreachable")


def list_s3_shards(spec: str, s3: S3Settings) -> list[Shard]:
    """The shards an S3 prefix or glob names, sorted by key (their shard keys are the object keys, as for an
    object named alone). Every page of the listing is read (1,000 keys a page)."""
    from botocore.exceptions import BotoCoreError, ClientError
    bucket, _, pattern = spec[len("s3://"):].partition("/")
    if not bucket:
        raise InputError(f"{spec}: expected s3://bucket/prefix/")
    magic = glob.has_magic(pattern)
    prefix = glob_root(pattern, "/") + "/" if magic else pattern
    prefix = "" if prefix == "./" else prefix
    client = s3_client(s3)
    keys: list[str] = []
    token: str | None = None
    try:
        while True:
            kwargs = {"Bucket": bucket, "Prefix": prefix, **({"ContinuationToken": token} if token else {})}
            page = _retrying(lambda: client.list_objects_v2(**kwargs), spec, s3)
            keys += [item["Key"] for item in page.get("Contents", [])]
            if not page.get("IsTruncated"):
                break
            token = page["NextContinuationToken"]
    except (ClientError, BotoCoreError) as exc:
        code = exc.response.get("Error", {}).get("Code", "") if isinstance(exc, ClientError) else ""
        raise InputError(f"{spec}: cannot list ({code or type(exc).__name__})") from None
    if magic:
        found = sorted(key for key in keys if not key.endswith("/") and _matches(key, pattern))
    else:
        found = sorted(key for key in keys if _is_shard_name(key.rsplit("/", 1)[-1]))
    if not found:
        what = "glob matches no objects" if magic else "prefix holds no *.warc* or *.arc(.gz) objects"
        raise InputError(f"{spec}: {what}")
    return [Shard(f"s3://{bucket}/{key}", shard_key(f"s3://{bucket}/{key}")) for key in found]


def _join_base(base: str | None, path: str) -> str:
    if is_remote(path) or os.path.isabs(path) or base is None:
        return path
    return base.rstrip("/") + "/" + path.lstrip("/")


def _read_manifest(uri: str, s3: S3Settings, base_url: str | None) -> list[Shard]:
    with open_stream(uri, s3) as raw:
        stream = gzip.GzipFile(fileobj=raw) if uri.endswith(".gz") else raw
        lines = io.TextIOWrapper(stream, encoding="utf-8").read().splitlines()
    base = base_url
    if base is None and is_remote(uri):
        # Common Crawl's paths are relative to the bucket (s3://commoncrawl/) or host root.
        scheme, _, rest = uri.partition("://")
        base = f"{scheme}://{rest.split('/', 1)[0]}/"
    elif base is None:
        base = os.path.dirname(os.path.abspath(uri))
    shards = []
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        shard = _join_base(base, line)
        relative = None if is_remote(line) or os.path.isabs(line) else line
        shards.append(Shard(shard, shard_key(shard, relative=relative)))
    return shards


def resolve_inputs(specs: list[str], s3: S3Settings, base_url: str | None = None) -> list[str]:
    """Expand specs (files, directories, globs, manifests, URLs) into a de-duplicated list of shard URIs."""
    return [shard.uri for shard in resolve_shards(specs, s3, base_url)]


def resolve_shards(specs: list[str], s3: S3Settings, base_url: str | None = None) -> list[Shard]:
    """Expand specs into shards with their keys (see :mod:`pipeline.reading.shards`), de-duplicated by location and key."""
    shards: list[Shard] = []
    for spec in specs:
        check_s3_address(spec)
        if is_manifest(spec):
            if not is_remote(spec) and not os.path.isfile(spec):
                raise InputError(f"{spec}: manifest not found")
            try:
                shards.extend(_read_manifest(spec, s3, base_url))
            except (OSError, UnicodeDecodeError) as exc:
                raise InputError(f"{spec}: cannot read manifest ({exc})") from None
        elif is_s3_listing(spec):
            shards.extend(list_s3_shards(spec, s3))
        elif is_remote(spec):
            shards.append(Shard(spec, shard_key(spec)))
        elif os.path.isdir(spec):
            found = sorted(p for p in glob.glob(os.path.join(spec, "**", "*"), recursive=True)
                           if os.path.isfile(p) and _is_shard_name(os.path.basename(p)))
            if not found:
                raise InputError(f"{spec}: directory holds no *.warc* or *.arc(.gz) files")
            shards.extend(Shard(p, shard_key(os.path.abspath(p), os.path.abspath(spec))) for p in found)
        elif glob.has_magic(spec):
            found = sorted(p for p in glob.glob(spec, recursive=True) if os.path.isfile(p))
            if not found:
                raise InputError(f"{spec}: glob matches no files")
            root = os.path.abspath(glob_root(spec))
            shards.extend(Shard(p, shard_key(os.path.abspath(p), root)) for p in found)
        elif os.path.isfile(spec):
            if not os.access(spec, os.R_OK):
                raise InputError(f"{spec}: not readable (permission denied)")
            shards.append(Shard(spec, shard_key(spec)))
        else:
            raise InputError(f"{spec}: no such file, directory, glob, manifest or URL")
    seen: set[str] = set()
    unique = []
    for shard in shards:
        uri = shard.uri if is_remote(shard.uri) else os.path.abspath(shard.uri)
        if uri not in seen and shard.key not in seen:
            seen.update((uri, shard.key))
            unique.append(Shard(uri, shard.key))
    return unique


def glob_root(spec: str, sep: str = os.sep) -> str:
    """The directory part of a glob before its first wildcard (``data/*/x.gz`` -> ``data``)."""
    parts = spec.split(sep)
    fixed = []
    for part in parts[:-1]:
        if glob.has_magic(part):
            break
        fixed.append(part)
    return sep.join(fixed) or "."


class TransientError(Exception):
    """A failure worth retrying (throttling, 5xx, dropped connection)."""


class RetriesExhausted(TransientError):
    """A remote read still failing after every attempt: the split fails, to be retried later."""


class ResumableStream(io.RawIOBase):
    """A read-only stream over a remote object that reopens at its current offset on failure."""

    def __init__(self, name: str, opener: Callable[[int], tuple[io.IOBase, bool, int | None]], max_attempts: int,
                 backoff_base_s: float, backoff_max_s: float) -> None:
        super().__init__()
        self.name = name
        self._opener = opener
        self._max_attempts = max_attempts
        self._backoff_base_s = backoff_base_s
        self._backoff_max_s = backoff_max_s
        self._pos = 0
        self._body: io.IOBase | None = None
        self._size: int | None = None  # the object's length, once a response told us
        self.retries = 0

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def _sleep(self, attempt: int) -> None:
        time.sleep(random.uniform(0, min(self._backoff_max_s, self._backoff_base_s * 2 ** attempt)))

    def _reopen(self) -> io.IOBase:
        body, honours_range, size = self._opener(self._pos)
        if size is not None:
            self._size = size
        if self._pos and not honours_range:
            # Some servers answer a ranged GET with the whole object: skip what we have.
            remaining = self._pos
            while remaining:
                chunk = body.read(min(remaining, 1 << 20))
                if not chunk:
                    raise TransientError("object shorter than before")
                remaining -= len(chunk)
        return body

    def readinto(self, buffer) -> int:  # type: ignore[override]
        for attempt in range(self._max_attempts):
            try:
                if self._size is not None and self._pos >= self._size:
                    return 0
                if self._body is None:
                    self._body = self._reopen()
                data = self._body.read(len(buffer))
                n = len(data)
                if not n and self._size is not None and self._pos < self._size:
                    # http.client returns b"" when a connection drops mid-body; never take that for EOF.
                    raise TransientError(f"connection closed at byte {self._pos} of {self._size}")
                buffer[:n] = data
                self._pos += n
                return n
            except Exception as exc:  # OSError, http.client's and botocore's own exception types
                transient = (isinstance(exc, (TransientError, OSError, http.client.HTTPException))
                             and not isinstance(exc, (PermanentError, RetriesExhausted))) or _is_transient_botocore(exc)
                if not transient:
                    raise
                self._close_body()
                if attempt + 1 == self._max_attempts:
                    # Not an OSError: the reader must not count this shard as read; the task fails
                    # and is retried (Spark, then the next run), because its marker is never written.
                    raise RetriesExhausted(f"{self.name}: gave up at byte {self._pos} after {self._max_attempts} "
                                           f"attempts ({type(exc).__name__}: {exc})") from exc
                self.retries += 1
                log.warning("%s: read failed at byte %d (%s); retry %d", self.name, self._pos,
                            type(exc).__name__, attempt + 1)
                self._sleep(attempt)
        raise AssertionError("unreachable")

    def _close_body(self) -> None:
        if self._body is not None:
            try:
                self._body.close()
            except Exception:  # a broken connection may fail to close; it is dropped either way
                pass
            self._body = None

    def close(self) -> None:
        self._close_body()
        super().close()


class PermanentError(OSError):
    """A remote failure that retrying cannot fix (missing object, access denied)."""


_TRANSIENT_CODES = {"SlowDown", "Throttling", "ThrottlingException", "RequestTimeout", "RequestTimeTooSkewed",
                    "InternalError", "ServiceUnavailable", "503", "500", "502", "504"}


def _is_transient_botocore(exc: Exception) -> bool:
    from botocore.exceptions import ClientError, ConnectionError as BotoConnectionError
    from botocore.exceptions import IncompleteReadError, ReadTimeoutError, ResponseStreamingError
    if isinstance(exc, (BotoConnectionError, ReadTimeoutError, IncompleteReadError, ResponseStreamingError)):
        return True
    if isinstance(exc, ClientError):
        code = str(exc.response.get("Error", {}).get("Code", ""))
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        return code in _TRANSIENT_CODES or status >= 500 or status == 429
    return False


_S3_CLIENTS: dict[tuple, object] = {}


def s3_client(s3: S3Settings):
    """A boto3 S3 client per (endpoint, region) per process; botocore retries are ours, not its."""
    key = (s3.endpoint_url, s3.region)
    client = _S3_CLIENTS.get(key)
    if client is None:
        import boto3
        from botocore.config import Config
        client = boto3.session.Session().client(
            "s3", endpoint_url=s3.endpoint_url, region_name=s3.region or "us-east-1",
            config=Config(retries={"max_attempts": 1, "mode": "standard"}, connect_timeout=10, read_timeout=60))
        _S3_CLIENTS[key] = client
    return client


def _total_size(content_range: str | None, content_length: str | int | None, pos: int,
                ranged: bool) -> int | None:
    """The whole object's length from ``Content-Range: bytes a-b/total`` or ``Content-Length``."""
    if ranged and content_range and "/" in content_range:
        total = content_range.rsplit("/", 1)[1].strip()
        return int(total) if total.isdigit() else None
    if content_length is None or not str(content_length).isdigit():
        return None
    return int(content_length) + (pos if ranged else 0)


def _s3_opener(uri: str, s3: S3Settings) -> Callable[[int], tuple[io.IOBase, bool, int | None]]:
    bucket, key = split_s3_uri(uri)

    def open_at(pos: int) -> tuple[io.IOBase, bool, int | None]:
        from botocore.exceptions import ClientError
        client = s3_client(s3)
        kwargs = {"Bucket": bucket, "Key": key}
        if pos:
            kwargs["Range"] = f"bytes={pos}-"
        try:
            response = client.get_object(**kwargs)
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", ""))
            if code in ("NoSuchKey", "NoSuchBucket", "AccessDenied", "404", "403", "InvalidRange", "416"):
                raise PermanentError(f"{uri}: {code}") from None
            raise
        honours_range = response["ResponseMetadata"]["HTTPStatusCode"] == 206
        size = _total_size(response.get("ContentRange"), response.get("ContentLength"), pos, honours_range)
        return response["Body"], honours_range, size

    return open_at


def _http_opener(uri: str) -> Callable[[int], tuple[io.IOBase, bool, int | None]]:
    def open_at(pos: int) -> tuple[io.IOBase, bool, int | None]:
        request = urllib.request.Request(uri, headers={"User-Agent": "warcplex"})
        if pos:
            request.add_header("Range", f"bytes={pos}-")
        try:
            response = urllib.request.urlopen(request, timeout=60)
        except urllib.error.HTTPError as exc:
            if exc.code in (429, 500, 502, 503, 504):
                raise TransientError(f"HTTP {exc.code}") from None
            raise PermanentError(f"{uri}: HTTP {exc.code}") from None
        ranged = response.status == 206
        size = _total_size(response.headers.get("Content-Range"), response.headers.get("Content-Length"), pos, ranged)
        if response.headers.get("Content-Encoding") not in (None, "identity"):
            size = None  # the length is of the encoded body
        return response, ranged, size

    return open_at


def open_stream(uri: str, s3: S3Settings) -> io.BufferedReader:
    """Open a shard or manifest as a buffered binary stream, resuming remote reads on failure."""
    if uri.startswith("s3://"):
        opener = _s3_opener(uri, s3)
    elif uri.startswith(("https://", "http://")):
        opener = _http_opener(uri)
    else:
        return open(uri, "rb")
    raw = ResumableStream(uri, opener, s3.max_attempts, s3.backoff_base_s, s3.backoff_max_s)
    return io.BufferedReader(raw, buffer_size=1 << 20)

