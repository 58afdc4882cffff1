"""The search side of the paper (seed 002, Tables 4-5), from the run itself: real full-text indexes of the
same sampled pages at each link of the cleaning chain, with tantivy.

The links: ``visible`` (all visible text, the paper's tag-stripped input), ``main_content`` (the
extractor's sentences), ``filtered`` (the sentences the filter kept), then ``corpus.<stage>`` after each
corpus stage (a page a stage dropped indexes as nothing); the pages are the run's index sample
(:mod:`pipeline.writing.index_sample`). Each link's texts are indexed with tantivy (Lucene-like: term
dictionary, postings with positions, field norms, no stored text) in a temporary directory; we report its
size on disk, the vocabulary and postings read back from its term dictionary, the tokens of tantivy's own
analyzer, the CPU its build took, and the CPU time of a fixed query set drawn from the pages themselves
(:func:`page_queries`), timed on every link in alternating passes. Eq. 9 turns those into CO2 per
million queries, and the CPU the run spent cleaning the sample's pages up to a link into the number of
queries after which the link's cheaper queries have paid for its cleaning (and its index build) against
the visible-text index (:func:`search_side`).
"""

from __future__ import annotations

import math
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any


from pipeline.analysis.carbon import carbon_estimate
from pipeline.config import CarbonSettings, IndexSettings, S3Settings
from pipeline.document import Sentence, page_text
from pipeline.writing.index_sample import (CORPUS_SAMPLE_DIR, SampledPage, open_dataset, read_index_sample,
                                     sample_key)

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


def page_queries(texts: list[str], count: int, terms: int, min_chars: int) -> list[str]:
    """The fixed query set, drawn from the pages themselves: for each of the first ``count`` pages (in sample
    order) that has any, the ``terms`` words of highest tf-idf in its text (tantivy's own tokens, letters
    only, at least ``min_chars`` long) among those that occur in more than one page, as one query (any of
    the words)."""
    analyzer = _analyzer()
    tokens = [[t for t in analyzer.analyze(text) if len(t) >= min_chars and t.isalpha()] if text else []
              for text in texts]
    document_frequency: dict[str, int] = {}
    for page in tokens:
        for token in set(page):
            document_frequency[token] = document_frequency.get(token, 0) + 1
    queries = []
    for page in tokens:
        if len(queries) == count:
            break
        frequency: dict[str, int] = {}
        for token in page:
            if document_frequency[token] > 1:
                frequency[token] = frequency.get(token, 0) + 1
        ranked = sorted(frequency, key=lambda t: (-frequency[t] * math.log(len(texts) / document_frequency[t]), t))
        if ranked:
            queries.append(" ".join(ranked[:terms]))
    return queries


# A timed pass answers the query set as many times as takes at least this much CPU on the slowest index, so that
# the clock's resolution and a moment's load weigh little.
PASS_SECONDS = 0.002


def query_cpu(indexes: list[TextIndex], queries: list[str], repeats: int) -> list[dict[str, float]]:
    """CPU (and wall) seconds per query on each index: the median of ``repeats`` passes, and the spread of the CPU
    (the slowest pass less the fastest), the passes alternating between the indexes after one warm-up pass each; a pass answers ``queries`` as many times over as takes
    :data:`PASS_SECONDS` on the slowest index (the same number on every index)."""
    parsed = [[index.index.parse_query(query, [FIELD]) for query in queries] for index in indexes]

    def run(i: int, times: int) -> tuple[float, float]:
        started, started_wall = time.process_time(), time.perf_counter()
        for _ in range(times):
            for query in parsed[i]:
                indexes[i].searcher.search(query, 10, count=True)
        return time.process_time() - started, time.perf_counter() - started_wall

    warm = max(run(i, 1)[0] for i in range(len(indexes)))
    times = max(1, math.ceil(PASS_SECONDS / warm)) if warm > 0 else 1
    cpu: list[list[float]] = [[] for _ in indexes]
    wall: list[list[float]] = [[] for _ in indexes]
    answered = max(1, len(queries) * times)
    for _ in range(repeats):
        for i in range(len(indexes)):
            seconds, wall_seconds = run(i, times)
            cpu[i].append(seconds / answered)
            wall[i].append(wall_seconds / answered)
    return [{"cpu_seconds": statistics.median(c), "cpu_spread_seconds": max(c) - min(c),
             "wall_seconds": statistics.median(w)} for c, w in zip(cpu, wall)]


def index_size(texts: list[str]) -> dict[str, int]:
    """Statistics of a throw-away tantivy index of ``texts``."""
    with tempfile.TemporaryDirectory(prefix="warcplex-index-") as directory:
        return TextIndex(texts, directory).stats()


def _corpus_links(pages: list[SampledPage], output: str, s3: S3Settings) -> list[tuple[str, list[str]]]:
    """``corpus.<stage>`` links: the sampled pages' text after each corpus stage (a page it dropped is empty; a
    null text, a page whose text no stage so far changed, is its ``written`` text)."""
    import pyarrow.compute as pc

    try:
        dataset = open_dataset(f"{output.rstrip('/')}/{CORPUS_SAMPLE_DIR}", s3, "corpus sample")
    except ValueError:
        return []
    if not dataset.files:
        return []
    ids = [page.record_id for page in pages]
    written = {page.record_id: page.written for page in pages}
    rows = dataset.to_table(columns=["stage", "warc_record_id", "text"],
                            filter=pc.field("warc_record_id").isin(ids)).to_pylist()
    per_stage: dict[str, dict[str, str]] = {}
    for row in rows:
        text = row["text"]
        per_stage.setdefault(row["stage"], {})[row["warc_record_id"]] = \
            written[row["warc_record_id"]] if text is None else text
    return [(f"corpus.{stage.split('-', 1)[1]}", [per_stage[stage].get(i, "") for i in ids])
            for stage in sorted(per_stage, key=lambda label: int(label.split("-", 1)[0]))]  # "<i>-<name>"


def chain_links(pages: list[SampledPage], output: str, s3: S3Settings) -> tuple[list[tuple[str, list[str]]], list[str]]:
    """The sampled pages' texts at each link of the chain, in order, and why a link is missing."""
    links: list[tuple[str, list[str]]] = []
    missing: list[str] = []
    if all(page.visible is not None for page in pages):
        links.append(("visible", [page.visible or "" for page in pages]))
    else:
        missing.append("visible: the tag-stripped text was not extracted (index.visible_text is off)")
    links.append(("main_content", [page.main_content for page in pages]))
    links.append(("filtered", [page.filtered for page in pages]))
    links += _corpus_links(pages, output, s3)
    return links, missing


def cleaning_cpu(stats: dict[str, Any], cascade: list[str], steps: list[str], links: list[str],
                 pages: int) -> dict[str, float | None]:
    """CPU seconds the run spent bringing the sampled ``pages`` to each link from all visible text, from its
    own per-page costs: the extraction stages (``main_content``), then the ``steps`` the cascade runs after
    them, by the names their CPU is counted under (``filtered``), then each corpus stage (the whole job's CPU
    during the corpus stages, ``job_cpu.corpus``, shared by their wall time, per document in); ``visible``'s
    own figure is the tag-stripping pass."""
    cpu = stats.get("cpu", {})
    counts = stats.get("records", {})
    run_pages = (counts.get("html", 0) + counts.get("wet", 0)) or 1
    extract = sum(float(cpu.get(name, 0.0)) for name in [*cascade, "wet"]) / run_pages
    after = sum(float(cpu.get(name, 0.0)) for name in steps)
    visible_pages = stats.get("index_sample", {}).get("visible_extracted", 0)
    costs: dict[str, float | None] = {
        "visible": float(cpu.get("visible_text", 0.0)) / visible_pages * pages if visible_pages else None,
        "main_content": extract * pages,
        "filtered": (extract + after / run_pages) * pages,
    }
    corpus = stats.get("corpus") or {}
    corpus_cpu = (stats.get("job_cpu") or {}).get("corpus")
    stages = corpus.get("stages", {})
    walls = sum(v.get("wall_seconds", 0.0) for v in stages.values())
    running = costs["filtered"]
    for name in corpus.get("order", []):
        share = stages[name].get("wall_seconds", 0.0) / walls if walls else 0.0
        documents = stages[name].get("documents_in") or corpus.get("documents_in") or 1
        if corpus_cpu is None or running is None:
            running = None
        else:
            running += corpus_cpu * share / documents * pages
        costs[f"corpus.{name}"] = running
    return {link: costs.get(link) for link in links}


def measurable(first: dict[str, Any], link: dict[str, Any]) -> bool:
    """Whether ``link``'s query CPU differs from ``first``'s by more than the measured spread of either (the
    slowest of its repeated passes less the fastest): otherwise the difference is noise at this size."""
    difference = abs(first["query_cpu_seconds"] - link["query_cpu_seconds"])
    return difference > max(first.get("query_cpu_spread_seconds", 0.0), link.get("query_cpu_spread_seconds", 0.0))


def search_side(chain: list[dict[str, Any]], carbon: CarbonSettings) -> None:
    """Add to each link eq. 9's kg CO2 of its build, of a million queries and of cleaning the sample up to it,
    ``query_difference_measurable`` (:func:`measurable`, against the first link, all visible text) and
    ``breakeven_queries``: where the difference is measurable, after how many queries answering from it instead
    of the first link has saved the CO2 of its cleaning and of the difference in index builds (None: not
    measurable, or its queries cost no less)."""
    first = chain[0]
    for link in chain:
        link["kg_co2_build"] = carbon_estimate(link["build_cpu_seconds"], carbon)["kg_co2"]
        link["kg_co2_per_million_queries"] = carbon_estimate(link["query_cpu_seconds"] * 1e6, carbon)["kg_co2"]
        cleaning = link.get("cleaning_cpu_seconds")
        link["kg_co2_cleaning"] = None if cleaning is None else carbon_estimate(cleaning, carbon)["kg_co2"]
    for link in chain:
        link["query_difference_measurable"] = link is not first and measurable(first, link)
        saving = (first["kg_co2_per_million_queries"] - link["kg_co2_per_million_queries"]) / 1e6
        cost = None if link is first or link["kg_co2_cleaning"] is None else \
            link["kg_co2_cleaning"] + link["kg_co2_build"] - first["kg_co2_build"]
        link["breakeven_queries"] = round(cost / saving) if cost is not None and saving > 0 \
            and link["query_difference_measurable"] else None


def example_page(pages: list[SampledPage]) -> str | None:
    """The record id of the page the summary suggests to `warcplex explain`: of the sampled pages, one the
    perplexity filter cut (if any), and of those the one cut most from its visible text; None without pages."""
    if not pages:
        return None
    return max(pages, key=lambda p: (len(p.filtered) < len(p.main_content),
                                     len(p.visible or p.main_content) - len(p.filtered), p.record_id)).record_id


def run_index_stats(output: str, s3: S3Settings, settings: IndexSettings, carbon: CarbonSettings,
                    stats: dict[str, Any], cascade: list[str], steps: list[str]) -> dict[str, Any]:
    """The ``index`` section of stats.json: the chain over the run's index sample, with the search side."""
    pages, sample = read_index_sample(output, s3, settings.sample_pages, settings.per_split_pages)
    links, missing = chain_links(pages, output, s3)
    main_texts = dict(links)["main_content"]
    queries = page_queries(main_texts, settings.queries, settings.query_terms, settings.min_query_chars)
    costs = cleaning_cpu(stats, cascade, steps, [name for name, _ in links], len(pages))
    chain: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="warcplex-index-") as directory:
        indexes = []
        for name, texts in links:
            started = time.process_time()
            index = TextIndex(texts, os.path.join(directory, name.replace(".", "_")))
            build = time.process_time() - started
            indexes.append(index)
            chain.append({"step": name, **index.stats(), "build_cpu_seconds": build,
                          "cleaning_cpu_seconds": costs.get(name)})
        for link, timing in zip(chain, query_cpu(indexes, queries, settings.query_repeats)):
            link["query_cpu_seconds"], link["query_wall_seconds"] = timing["cpu_seconds"], timing["wall_seconds"]
            link["query_cpu_spread_seconds"] = timing["cpu_spread_seconds"]
    first = chain[0]
    for link in chain:
        link["share_of_first"] = {key: (link[key] / first[key] if first.get(key) else None) for key in CHAIN_KEYS}
        link["query_speedup"] = first["query_cpu_seconds"] / link["query_cpu_seconds"] if link["query_cpu_seconds"] \
            else None
    search_side(chain, carbon)
    by_step = {link["step"]: link for link in chain}
    raw, clean = by_step["main_content"], by_step["filtered"]
    result: dict[str, Any] = {
        "engine": "tantivy",
        "pages": len(pages),
        "sample": {**sample, "sample_pages": settings.sample_pages, "sample_share": settings.sample_share,
                   "of_pages": stats.get("outcome", {}).get("kept", 0)
                   + stats.get("outcome", {}).get("empty_after_filter", 0)},
        "raw": {key: raw[key] for key in (*CHAIN_KEYS, "documents", "vocabulary")},
        "clean": {key: clean[key] for key in (*CHAIN_KEYS, "documents", "vocabulary")},
        "ratio": {key: (clean[key] / raw[key] if raw[key] else None)
                  for key in ("index_bytes", "bytes_text", "tokens", "vocabulary", "postings")},
        "queries": {
            "how": (f"for each of the first {settings.queries} sampled pages, its {settings.query_terms} words of "
                    f"highest tf-idf in its main content that occur in more than one page (at least "
                    f"{settings.min_query_chars} letters), any of them; top 10 and the hit count; the median CPU "
                    f"of {settings.query_repeats} passes alternating between the links, each pass answering the "
                    f"set as many times as takes {PASS_SECONDS:g} CPU-s on the slowest link"),
            "count": len(queries),
            "examples": queries[:5],
            "repeats": settings.query_repeats,
            "raw_ms_per_query": raw["query_cpu_seconds"] * 1000,
            "clean_ms_per_query": clean["query_cpu_seconds"] * 1000,
            "speedup": raw["query_cpu_seconds"] / clean["query_cpu_seconds"] if clean["query_cpu_seconds"] else None,
        },
        "chain": chain,
        "example": example_page(pages),
    }
    if missing:
        result["chain_missing"] = missing
    return result
