"""The output directory rules, checked on the driver before Spark starts.

An output is a directory warcplex owns: empty or new, or stamped by an earlier run with
``_warcplex.json`` (its config fingerprint) and holding nothing but warcplex's own entries.
It must not be a file, lie inside an input directory (the next run would read it back as
input) or be unwritable. A rerun with a different config fingerprint is refused unless
``--overwrite``, which removes the earlier run's entries (only warcplex's own) first.
Every problem is one :class:`OutputError` line.

The config fingerprint hashes the settings that change what a run writes, and the page rows' columns;
Spark, S3, paths of side outputs, carbon and index settings do not count.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
from typing import Any

from pyarrow import fs as pafs

from pipeline.config import Settings, resolve_path
from pipeline.reading.sources import glob_root, is_manifest, is_remote
from pipeline.redact import redact
from pipeline.writing.output import (CORPUS_DIR, CORPUS_DROPPED_DIR, CORPUS_STATE_DIR, DATASET_DIR,
                                     INDEX_STATE_DIR, SUCCESS, OutputTarget)
from pipeline.writing.rows import PAGE_SCHEMA

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


STAMP = "_warcplex.json"
# Everything a run writes at the top of its output.
OWN_ENTRIES = frozenset({DATASET_DIR, "_markers", "_tmp", "_ids", SUCCESS, STAMP, "stats.json", "summary.txt",
                         "report.html", "sweep.json", CORPUS_DIR, CORPUS_DROPPED_DIR, CORPUS_STATE_DIR,
                         INDEX_STATE_DIR, "explain"})


class OutputError(ValueError):
    """An output directory warcplex must not write to; the message is one line."""


def _top_level(target: OutputTarget) -> list[str]:
    selector = pafs.FileSelector(target.root, recursive=False, allow_not_found=True)
    return sorted(info.base_name for info in target.fs.get_file_info(selector))


def _inside(path: str, directory: str) -> bool:
    path, directory = os.path.realpath(path), os.path.realpath(directory)
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def _input_dirs(specs: list[str]) -> list[str]:
    dirs = []
    for spec in specs:
        if is_remote(spec) or is_manifest(spec):
            continue
        if os.path.isdir(spec):
            dirs.append(spec)
        elif glob.has_magic(spec):
            dirs.append(glob_root(spec))
    return dirs


def _side_outputs(settings: Settings) -> list[str]:
    return [path for path in (settings.output.dropped, settings.output.sentences) if path]


def _remove(target: OutputTarget, name: str) -> None:
    path = target.path(name)
    info = target.fs.get_file_info(path)
    if info.type == pafs.FileType.Directory:
        target.fs.delete_dir(path)
    elif info.type != pafs.FileType.NotFound:
        target.fs.delete_file(path)


def _check_location(output: str, specs: list[str]) -> None:
    if is_remote(output):
        return
    if os.path.exists(output) and not os.path.isdir(output):
        raise OutputError(f"output {output} is a file, not a directory")
    for directory in _input_dirs(specs):
        if _inside(output, directory):
            raise OutputError(f"output {output} lies inside the input directory {directory} "
                              "(the next run would read it as input); choose an output outside it")


def _check_side_output(path: str, settings: Settings, overwrite: bool) -> None:
    """A side output (``--dropped``, ``--sentences``) holds only ``language=*`` partitions and ``_tmp``."""
    target = OutputTarget(path, settings.s3)
    strangers = [n for n in _top_level(target) if not n.startswith(("language=", "_tmp"))]
    if strangers:
        raise OutputError(f"{path} holds files warcplex did not write ({', '.join(strangers[:5])}); "
                          "choose another directory")
    if overwrite:
        target.fs.delete_dir_contents(target.root, missing_dir_ok=True)


def prepare_output(output: str, settings: Settings, specs: list[str], overwrite: bool = False) -> None:
    """Check ``output`` (and the side outputs) and stamp it with this run's config fingerprint.

    Raises :class:`OutputError` for a file, an output inside an input directory, a directory
    holding files warcplex did not write, a different config without ``overwrite``, and a
    path that cannot be written.
    """
    _check_location(output, specs)
    for side in _side_outputs(settings):
        _check_location(side, specs)
    target = OutputTarget(output, settings.s3)
    fingerprint = config_fingerprint(settings)
    current = redact(fingerprinted_settings(settings))
    try:
        names = _top_level(target)
        stamp = json.loads(target.read_bytes(STAMP) or b"{}") if STAMP in names else {}
        # Side outputs placed inside the output, now or by an earlier run (recorded in the stamp).
        own_sides = {os.path.relpath(os.path.abspath(side), os.path.abspath(output)).split(os.sep)[0]
                     for side in _side_outputs(settings)
                     if not is_remote(side) and not is_remote(output) and _inside(side, output)}
        own_sides |= set(stamp.get("side_outputs", []))
        if names and STAMP not in names:
            raise OutputError(f"output {output} is not empty and was not written by warcplex "
                              f"(it holds {', '.join(names[:5])}); choose a new --output")
        strangers = [n for n in names if n not in OWN_ENTRIES and n not in own_sides]
        if strangers:
            raise OutputError(f"output {output} holds files warcplex did not write ({', '.join(strangers[:5])}); "
                              "move them away or choose a new --output")
        for side in _side_outputs(settings):
            _check_side_output(side, settings, overwrite)
        if stamp:
            if stamp.get("fingerprint") != fingerprint and not overwrite:
                raise OutputError(f"output {output} was written with a different configuration "
                                  f"({settings_difference(stamp.get('settings') or {}, current)}); "
                                  "rerun with --overwrite to replace it, or choose a new --output")
            if overwrite:
                for name in names:
                    if name in OWN_ENTRIES or name in own_sides:
                        _remove(target, name)
        stamp = {"writer": "warcplex", "fingerprint": fingerprint, "settings": current,
                 "side_outputs": sorted(own_sides)}
        target.write_bytes(STAMP, json.dumps(stamp, indent=1, sort_keys=True).encode("utf-8"))
    except OSError as exc:
        reason = exc.strerror or str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise OutputError(f"cannot write to output {output}: {reason}") from None
