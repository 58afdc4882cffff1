"""Real full-text index statistics: the same pages at each link of the cleaning chain, with tantivy.

The pages come from the per-sentence side output (``output.sentences``): a page's raw text is
all its extracted sentences, its cleaned text the sentences a filter keeps. The chain adds the
page's tag-stripped text before them (``<output.sentences>/_visible/``, written at run time when
``index.visible_text`` is on) and its text after each corpus stage after them
(``_corpus/index_sample/``, written by the corpus builder for the same sample). Each text set is
indexed with tantivy (Lucene-like: term dictionary, postings with positions, field norms,
no stored text) in a temporary directory; we report its size on disk, the vocabulary size
and postings count read back from the index's term dictionary, the token count from
tantivy's own analyzer, and the latency of a fixed query set (seed 002, Tables 2 and 4).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any


from pipeline.config import IndexSettings, S3Settings
from pipeline.writing.rows import VISIBLE_DIR
from pipeline.writing.sample import CORPUS_SAMPLE_DIR, open_dataset, sample_key
from pipeline.document import Sentence, page_text

FIELD = "body"
CHAIN_KEYS = ("bytes_text", "tokens", "postings", "index_bytes")


@dataclass(frozen=True)
class ScoredPage:
    """One page's sentences in order, as the run scored them."""

    record_id: str
    language: str
    sentences: tuple[Sentence, ...]

    def text(self, keep: Callable[[Sentence], bool] | None = None) -> str:
        """The page text from the sentences ``keep`` accepts (all of them when None)."""
        return page_text(self.sentences, keep)


def load_scored_pages(sentences_uri: str, s3: S3Settings, sample_pages: int = 0,
                      languages: Iterable[str] | None = None) -> list[ScoredPage]:
    """Read the sentence side output; keep a deterministic sample of ``sample_pages`` pages (0 = all)."""
    import pyarrow.compute as pc

    dataset = open_dataset(sentences_uri, s3, "sentence scores")
    condition = None
    if languages:
        condition = pc.field("language").isin(list(languages))
    if sample_pages:
        ids = dataset.to_table(columns=["warc_record_id"], filter=condition).column("warc_record_id")
        unique = sorted(set(ids.to_pylist()), key=sample_key)[:sample_pages]
        id_filter = pc.field("warc_record_id").isin(unique)
        condition = id_filter if condition is None else condition & id_filter
    table = dataset.to_table(columns=["warc_record_id", "language", "paragraph", "position", "sentence",
                                      "n_tokens", "perplexity", "kept"], filter=condition)
    table = table.sort_by([("warc_record_id", "ascending"), ("position", "ascending")])
    pages: list[ScoredPage] = []
    current: list[Sentence] = []
    current_id, current_lang = None, None
    for row in table.to_pylist():
        if row["warc_record_id"] != current_id:
            if current_id is not None:
                pages.append(ScoredPage(current_id, current_lang, tuple(current)))
            current, current_id, current_lang = [], row["warc_record_id"], row["language"]
        current.append(Sentence(row["sentence"], row["paragraph"], row["perplexity"], row["kept"],
                                n_tokens=row["n_tokens"]))
    if current_id is not None:
        pages.append(ScoredPage(current_id, current_lang, tuple(current)))
    return pages


def _analyzer():
    """tantivy's ``default`` tokenizer chain: simple split, drop tokens >= 40 bytes, lower-case."""
    import tantivy

    return (tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
            .filter(tantivy.Filter.remove_long(40)).filter(tantivy.Filter.lowercase()).build())


def _directory_bytes(path: str) -> int:
    total = 0
    for entry in os.scandir(path):
        if entry.is_file() and not entry.name.endswith(".lock"):
            total += entry.stat().st_size
    return total


class TextIndex:
    """A tantivy index of a list of texts in a directory (positions indexed, text not stored)."""

    def __init__(self, texts: list[str], directory: str) -> None:
        import tantivy

        builder = tantivy.SchemaBuilder()
        builder.add_text_field(FIELD, stored=False, tokenizer_name="default", index_option="position")
        os.makedirs(directory, exist_ok=True)
        self.index = tantivy.Index(builder.build(), path=directory, reuse=False)
        writer = self.index.writer(heap_size=64_000_000, num_threads=1)
        for text in texts:
            if text:
                writer.add_document(tantivy.Document(**{FIELD: text}))
        writer.commit()
        writer.wait_merging_threads()
        self.index.reload()
        self.searcher = self.index.searcher()
        self.directory = directory
        self.texts = texts

    def term_doc_freqs(self) -> list[tuple[str, int]]:
        """Every term of the index with its document frequency, most frequent first."""
        return self.searcher.terms_with_prefix(FIELD, "")

    def stats(self) -> dict[str, int]:
        terms = self.term_doc_freqs()
        analyzer = _analyzer()
        return {
            "documents": self.searcher.num_docs,
            "bytes_text": sum(len(t.encode("utf-8")) for t in self.texts),
            "tokens": sum(len(analyzer.analyze(t)) for t in self.texts if t),
            "vocabulary": len(terms),
            "postings": sum(count for _, count in terms),
            "index_bytes": _directory_bytes(self.directory),
        }

    def query_pass(self, terms: list[str]) -> float:
        """Wall seconds per query (top 10 plus the hit count) for one pass over ``terms``."""
        queries = [self.index.parse_query(term, [FIELD]) for term in terms]
        start = time.perf_counter()
        for query in queries:
            self.searcher.search(query, 10, count=True)
        return (time.perf_counter() - start) / len(queries) if queries else 0.0


def query_latency(first: TextIndex, second: TextIndex, terms: list[str], repeats: int) -> tuple[float, float]:
    """Median seconds per query on each index; passes alternate between them after one warm-up pass each."""
    first.query_pass(terms)
    second.query_pass(terms)
    a, b = [], []
    for _ in range(repeats):
        a.append(first.query_pass(terms))
        b.append(second.query_pass(terms))
    return statistics.median(a), statistics.median(b)


def query_terms(index: TextIndex, count: int, min_chars: int) -> list[str]:
    """The fixed query set: the ``count`` terms of highest document frequency, alphabetic, >= ``min_chars``."""
    return [term for term, _ in index.term_doc_freqs() if len(term) >= min_chars and term.isalpha()][:count]


def index_size(texts: list[str]) -> dict[str, int]:
    """Statistics of a throw-away tantivy index of ``texts``."""
    with tempfile.TemporaryDirectory(prefix="warcplex-index-") as directory:
        return TextIndex(texts, directory).stats()


def compare_raw_clean(pages: list[ScoredPage], settings: IndexSettings) -> dict[str, Any]:
    """Index the raw and the cleaned text of ``pages``; sizes, ratio, vocabulary, postings, query latency."""
    raw_texts = [page.text() for page in pages]
    clean_texts = [page.text(lambda s: s.kept) for page in pages]
    with tempfile.TemporaryDirectory(prefix="warcplex-index-") as directory:
        raw = TextIndex(raw_texts, os.path.join(directory, "raw"))
        clean = TextIndex(clean_texts, os.path.join(directory, "clean"))
        raw_stats, clean_stats = raw.stats(), clean.stats()
        terms = query_terms(clean, settings.queries, settings.min_query_chars)
        raw_q, clean_q = query_latency(raw, clean, terms, settings.query_repeats)
    return {
        "engine": "tantivy",
        "pages": len(pages),
        "raw": raw_stats,
        "clean": clean_stats,
        "ratio": {key: (clean_stats[key] / raw_stats[key] if raw_stats[key] else None)
                  for key in ("index_bytes", "bytes_text", "tokens", "vocabulary", "postings")},
        "queries": {
            "terms": terms,
            "repeats": settings.query_repeats,
            "raw_ms_per_query": raw_q * 1000,
            "clean_ms_per_query": clean_q * 1000,
            "speedup": raw_q / clean_q if clean_q else None,
        },
    }


def _texts_by_id(uri: str, s3: S3Settings, ids: list[str], columns: list[str]) -> list[dict[str, Any]] | None:
    """Rows of the Parquet dataset under ``uri`` whose record id is in ``ids``; None when there is none."""
    import pyarrow.compute as pc

    try:
        dataset = open_dataset(uri, s3, "texts")
    except ValueError:
        return None
    if not dataset.files:
        return None
    return dataset.to_table(columns=columns, filter=pc.field("warc_record_id").isin(ids)).to_pylist()


def chain_texts(pages: list[ScoredPage], sentences_uri: str, output: str | None,
                s3: S3Settings) -> tuple[list[tuple[str, list[str]]], list[str]]:
    """The sampled pages' texts at each link of the chain, in order, and why a link is missing.

    ``visible`` (tag-stripped), ``main_content`` (the extractor's sentences), ``filtered`` (the
    sentences kept), then ``corpus.<stage>`` for each corpus stage (a page it dropped is empty).
    """
    ids = [page.record_id for page in pages]
    links: list[tuple[str, list[str]]] = []
    missing: list[str] = []
    visible = _texts_by_id(f"{sentences_uri.rstrip('/')}/{VISIBLE_DIR}", s3, ids, ["warc_record_id", "text"])
    by_id = {row["warc_record_id"]: row["text"] for row in visible or []}
    if visible is not None and len(by_id) == len(ids):
        links.append(("visible", [by_id[i] for i in ids]))
    else:
        missing.append(f"visible: tag-stripped text of {len(ids) - len(by_id)} of {len(ids)} sampled pages not "
                       f"written (index.visible_text off, or pages from an older run)")
    links.append(("main_content", [page.text() for page in pages]))
    links.append(("filtered", [page.text(lambda s: s.kept) for page in pages]))
    stages = _texts_by_id(f"{output.rstrip('/')}/{CORPUS_SAMPLE_DIR}", s3, ids,
                          ["stage", "warc_record_id", "text"]) if output else None
    if stages is not None:
        per_stage: dict[str, dict[str, str]] = {}
        for row in stages:
            per_stage.setdefault(row["stage"], {})[row["warc_record_id"]] = row["text"]
        for stage in sorted(per_stage, key=lambda label: int(label.split("-", 1)[0])):  # "<i>-<name>"
            texts = per_stage[stage]
            links.append((f"corpus.{stage.split('-', 1)[1]}", [texts.get(i, "") for i in ids]))
    return links, missing


def index_chain(links: list[tuple[str, list[str]]], known: dict[str, dict[str, int]]) -> list[dict[str, Any]]:
    """tantivy statistics of each link (``known`` ones are not indexed again), each one's share of the first's."""
    chain = [{"step": name, **(known[name] if name in known else index_size(texts))} for name, texts in links]
    first = chain[0] if chain else {}
    for link in chain:
        link["share_of_first"] = {key: (link[key] / first[key] if first.get(key) else None) for key in CHAIN_KEYS}
    return chain


def run_index_stats(sentences_uri: str, s3: S3Settings, settings: IndexSettings,
                    output: str | None = None) -> dict[str, Any]:
    """The ``index`` section of stats.json for a finished run's sentence side output (and corpus stages)."""
    pages = load_scored_pages(sentences_uri, s3, settings.sample_pages)
    result = compare_raw_clean(pages, settings)
    links, missing = chain_texts(pages, sentences_uri, output, s3)
    result["chain"] = index_chain(links, {"main_content": result["raw"], "filtered": result["clean"]})
    if missing:
        result["chain_missing"] = missing
    result["sample_pages"] = settings.sample_pages
    result["source"] = sentences_uri
    return result
