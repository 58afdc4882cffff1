"""``warcplex explain``: write one self-contained HTML explanation per page, and an index.

Pages come from WARC or WET files (``--input``, as ``warcplex run`` takes them) run with ``--config``/``--set``, or
from a finished output (``--from-output``): its rows choose the pages, its recorded configuration runs them (checked
against the output's stamp, so that what is shown is what the run did) and each explanation says whether its kept
text is the row's ``text``. The WARCs are the run's recorded inputs unless ``--input`` names them.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Iterator

from pipeline.config import ConfigError, S3Settings, Settings, load_settings, settings_from
from pipeline.document import Page
from pipeline.explain.render import explanation, index_page
from pipeline.explain.sample import entry
from pipeline.explain.select import document_group, file_name, row_group, smallest
from pipeline.explain.trace import TracingLoop
from pipeline.reading.sources import InputError, resolve_shards
from pipeline.reading.reader import ShardReadError, read_pages
from pipeline.reading.shards import Split
from pipeline.redact import redact
from pipeline.stats import Stats
from pipeline.writing.outdir import STAMP, config_fingerprint, fingerprinted_settings, settings_difference
from pipeline.writing.output import DATASET_DIR, OutputTarget
from pipeline.writing.index_sample import open_dataset, sample_key
from pipeline.user_errors import print_error

# Settings the stamp keeps by identity only (a file's name and size, the registry's hash): taken from stats.json's
# recorded configuration, else the defaults, and then checked by the fingerprint.
_BY_IDENTITY = (("extract", "blocks_model"), ("langid", "model_path"), ("perplexity", "registry"))
ROW_COLUMNS = ["warc_record_id", "url", "warc_filename", "fallback_reason", "n_sentences", "perplexity_median",
               "text_bytes_raw", "text_bytes_clean"]


class ExplainError(ValueError):
    """A request ``warcplex explain`` cannot answer; the message is one line."""


def output_settings(output: str, overrides: list[str]) -> tuple[Settings, list[str]]:
    """The configuration a finished output was written with, and its recorded inputs: stats.json's configuration
    (else the stamp's settings), ``overrides`` applied, and the result's fingerprint checked against the stamp."""
    s3 = load_settings(None, [o for o in overrides if o.startswith("s3.")]).s3
    target = OutputTarget(output, s3)
    stamp = json.loads(target.read_bytes(STAMP) or b"null")
    if not stamp:
        raise ExplainError(f"{output} has no {STAMP}: not the output of `warcplex run`")
    stats = json.loads(target.read_bytes("stats.json") or b"null") or {}
    tree = stats.get("run", {}).get("config")
    if not tree:
        tree = json.loads(json.dumps(stamp.get("settings") or {}))
        for section, key in _BY_IDENTITY:
            tree.get(section, {}).pop(key, None)
        tree.get("output", {}).pop("page_columns", None)
    settings = settings_from(tree, overrides, f"the configuration recorded in {output}")
    if config_fingerprint(settings) != stamp.get("fingerprint"):
        difference = settings_difference(stamp.get("settings") or {}, redact(fingerprinted_settings(settings)))
        raise ExplainError(f"cannot rebuild the configuration {output} was written with ({difference}); "
                           "give the run's settings with --set")
    return settings, list(stats.get("run", {}).get("inputs") or [])


def output_rows(output: str, s3: S3Settings) -> list[dict]:
    """The page rows of a finished output (without their text)."""
    try:
        dataset = open_dataset(f"{output.rstrip('/')}/{DATASET_DIR}", s3, "page rows")
    except ValueError as exc:
        raise ExplainError(str(exc)) from None
    return dataset.to_table(columns=ROW_COLUMNS + ["language"]).to_pylist()


def row_texts(output: str, s3: S3Settings, record_ids: set[str]) -> dict[str, str]:
    """The ``text`` of the rows of ``record_ids``."""
    import pyarrow.compute as pc

    dataset = open_dataset(f"{output.rstrip('/')}/{DATASET_DIR}", s3, "page rows")
    table = dataset.to_table(columns=["warc_record_id", "text"],
                             filter=pc.field("warc_record_id").isin(sorted(record_ids)))
    return dict(zip(table.column(0).to_pylist(), table.column(1).to_pylist()))


def run_dropped(settings: Settings, record_ids: set[str]) -> dict[str, list[tuple[str, str]]]:
    """The run's dropped side output (``output.dropped``) of these pages: (sentence, reason) each; empty when the run
    wrote none or it is not where the run wrote it."""
    import pyarrow.compute as pc

    if not settings.output.dropped or not record_ids:
        return {}
    try:
        dataset = open_dataset(settings.output.dropped, settings.s3, "dropped sentences")
    except ValueError:
        return {}
    table = dataset.to_table(columns=["warc_record_id", "sentence", "reason"],
                             filter=pc.field("warc_record_id").isin(sorted(record_ids)))
    found: dict[str, list[tuple[str, str]]] = {record_id: [] for record_id in record_ids}
    for record_id, sentence, reason in zip(*(table.column(i).to_pylist() for i in range(3))):
        found[record_id].append((sentence, reason))
    return found


def find_pages(specs: list[str], settings: Settings, wanted: set[str] | None = None, url: str | None = None,
               sample: int = 0, shard_names: set[str] = frozenset()) -> list[Page]:
    """The pages of ``specs`` whose record id is ``wanted``, whose URL is ``url``, or the ``sample`` with the smallest
    sample keys; the shards named ``shard_names`` (the rows' ``warc_filename``) are read first."""
    shards = resolve_shards(specs, settings.s3, settings.input.base_url)
    splits = sorted((Split(s.uri, 0, 1, shard_key=s.key) for s in shards), key=lambda s: s.shard_name not in shard_names)
    found: list[tuple[bytes, Page]] = []
    left = set(wanted or ())
    for split in splits:
        for page in read_pages(split, settings.input, settings.s3, Stats()):
            if wanted is not None and page.record_id in left:
                found.append((b"", page))
                left.discard(page.record_id)
            elif url is not None and page.url.rstrip("/") == url.rstrip("/"):
                found.append((b"", page))
            elif sample:
                key = sample_key(page.record_id)
                if len(found) < sample or key < found[-1][0]:
                    found = sorted([*found, (key, page)], key=lambda item: item[0])[:sample]
        if wanted is not None and not left:
            break
    return [page for _, page in found]


def explain(args: argparse.Namespace) -> tuple[str, list[dict], list[str]]:
    """Write the explanations; return the index's path, the entries and the record ids not found."""
    overrides = list(args.set) + ([f"input.base_url={args.input_base_url}"] if args.input_base_url else [])
    rows: dict[str, dict] = {}
    if args.from_output:
        if args.config:
            raise ExplainError("--config goes with --input: an output is explained with its own configuration")
        settings, inputs = output_settings(args.from_output, overrides)
        inputs = args.input or inputs
        if not inputs:
            raise ExplainError(f"{args.from_output} records no inputs (no stats.json): give the WARCs with --input")
        rows = {row["warc_record_id"]: row for row in output_rows(args.from_output, settings.s3)}
    elif args.input:
        settings = load_settings(args.config, overrides)
        inputs = args.input
    else:
        raise ExplainError("give the pages' WARC files with --input, or a finished output with --from-output")
    wanted: set[str] | None = None
    if args.record_id:
        wanted = {args.record_id}
    elif rows and args.sample:
        per_group = smallest([(r, row_group(row)) for r, row in rows.items()], 1 << 30)
        wanted = set(_spread(per_group, args.sample))
    elif rows and args.url:
        wanted = {r for r, row in rows.items() if (row["url"] or "").rstrip("/") == args.url.rstrip("/")} or None
    names = {rows[r]["warc_filename"] for r in wanted or () if r in rows}
    pages = find_pages(inputs, settings, wanted, args.url if wanted is None else None,
                       0 if wanted is not None else args.sample, names)
    if not pages:
        raise ExplainError("no such page in " + ", ".join(inputs) + (
            " (no HTML response or WET record with that URL or record id)" if not args.sample else ""))
    missing = sorted((wanted or set()) - {page.record_id for page in pages})
    in_rows = {p.record_id for p in pages} & set(rows)
    texts = row_texts(args.from_output, settings.s3, in_rows) if rows else {}
    dropped = run_dropped(settings, in_rows)
    target = OutputTarget(args.output, settings.s3)
    loop = TracingLoop(settings)
    entries = []
    for number, doc in enumerate(loop.run(pages)):
        record_id = doc.page.record_id
        row_text, its_dropped = texts.get(record_id), dropped.get(record_id)
        name = row_group(rows[record_id]) if record_id in rows else document_group(doc)
        file = file_name(number, doc.page.url, record_id)
        page = explanation(doc, settings, loop.threshold, row_text, run_dropped=its_dropped)
        target.write_bytes(file, page.encode("utf-8"))
        entries.append(entry(doc, name, file, row_text, its_dropped))
    target.write_bytes("index.html", index_page(entries).encode("utf-8"))
    target.fs.delete_dir_contents(target.path("_tmp"), missing_dir_ok=True)  # write_bytes' staging, now empty
    target.fs.delete_dir(target.path("_tmp"))
    return target.path("index.html"), entries, missing


def _spread(chosen: list[tuple[str, str]], count: int) -> Iterator[str]:
    """``count`` record ids of ``chosen`` (record id, group), taking each group's first in turn."""
    by_group: dict[str, list[str]] = {}
    for record_id, name in chosen:
        by_group.setdefault(name, []).append(record_id)
    taken = 0
    for depth in range(max(map(len, by_group.values()), default=0)):
        for ids in by_group.values():
            if depth < len(ids) and taken < count:
                taken += 1
                yield ids[depth]


def _positive(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a positive number of pages")
    return int(value)


def add_parser(commands) -> None:
    parser = commands.add_parser("explain", help="explain pages in a browser: the page with its blocks outlined, "
                                 "the text kept and dropped, the cascade's path", description=__doc__.split("\n\n")[1])
    parser.add_argument("--input", nargs="+", action="extend", metavar="SPEC",
                        help="WARC or WET files, directories, manifests, s3:// or https:// URLs (as `warcplex run`)")
    parser.add_argument("--from-output", metavar="DIR", help="explain pages of this finished `warcplex run` output, "
                        "with its configuration (its WARCs are the recorded inputs unless --input is given)")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--url", help="the page with this WARC-Target-URI")
    which.add_argument("--record-id", help="the page with this WARC-Record-ID")
    which.add_argument("--sample", type=_positive, metavar="N",
                       help="N pages (from an output: spread over its outcome groups)")
    parser.add_argument("--output", required=True, help="directory for the HTML files (local or s3://)")
    parser.add_argument("--config", help="YAML preset, as `warcplex run` (not with --from-output)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override one config key")
    parser.add_argument("--input-base-url", help="base for relative paths in a manifest (input.base_url)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        index, entries, missing = explain(args)
    except (ExplainError, ConfigError, InputError, ShardReadError) as exc:
        return print_error(str(exc))
    differs = sum(1 for e in entries if e["same"] is False)
    print(f"warcplex explain: {len(entries)} page(s) explained: {index}")
    if missing:
        print(f"warcplex explain: {len(missing)} page(s) of the output not found in the inputs: "
              + ", ".join(missing[:5]), file=sys.stderr)
    if differs:
        print(f"warcplex explain: {differs} page(s) where the kept text differs from the run's row", file=sys.stderr)
    return 0
