"""The corpus stages: each turns a DataFrame of documents into kept documents plus what it dropped.

Documents carry the per-page columns of ``data/`` (``warc_record_id`` is the key) plus ``host``,
``registered_domain`` and ``lines_removed``. A stage returns :class:`StageOutput`; the
:class:`~pipeline.corpus.builder.CorpusBuilder` checkpoints it and counts it. A stage is a part
(:mod:`pipeline.parts`): a :class:`CorpusStage` in a module of ``pipeline/corpus/`` that says its
``name``, which ``corpus.stages`` lists; a :class:`CorpusRule` is a stage that drops the documents
one condition rejects.

Which copy of a duplicate is kept is decided by :func:`order_key`: earliest WARC-Date, then
record id, then shard name, so the choice does not depend on partitioning or on the night.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable

import pyarrow as pa
import pyarrow.compute as pc

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, DoubleType, IntegerType, LongType, StringType, StructField, StructType

from pipeline.config import ConfigError, DedupSettings, QualitySettings, RepeatedLinesSettings, Settings
from pipeline.corpus import text_columns as T
from pipeline.corpus import normalize as N
from pipeline.corpus import signals
from pipeline.corpus.lists import read_blocklist

# What exact dedup's keys keep of each document besides the hash of its text: its order, its language, and what its
# row in the dropped documents gives (with ``text_bytes``, the UTF-8 bytes of its text).
KEY_COLUMNS = ("warc_record_id", "warc_date", "warc_filename", "language", "url", "registered_domain")
DROPPED_DOC_COLUMNS = ["warc_record_id", "url", "warc_date", "language", "registered_domain", "reason",
                       "duplicate_of", "text_bytes"]
_NO_DATE = "9999-12-31 23:59:59"


# Up to this many record ids are joined by broadcast (they pass through the driver, some 10 MB), more by a shuffle.
BROADCAST_IDS = 200_000


def by_ids(ids: DataFrame, rows: int) -> DataFrame:
    """``ids`` (``rows`` of them) as the side of a join on ``warc_record_id``: broadcast when few, so that the
    documents joined with them are not shuffled."""
    return F.broadcast(ids) if rows <= BROADCAST_IDS else ids


@dataclass
class StageOutput:
    """What one stage produced: the kept documents, the dropped ones, and removed lines (if any)."""

    docs: DataFrame
    dropped_docs: DataFrame | None = None
    dropped_lines: DataFrame | None = None
    keys: DataFrame | None = None
    """:class:`ExactDedup` in a build that keeps its keys: the new documents' (hash, order, build, language)."""
    demoted: DataFrame | None = None
    """:class:`ExactDedup` in a build after an earlier one: documents of earlier builds whose keeper changed
    (``warc_record_id``, ``duplicate_of``, ``generation``, ``language``)."""


def order_key() -> Column:
    """The keeper order of duplicates: earliest WARC-Date (none last), record id, shard."""
    stamp = F.coalesce(F.col("warc_date"), F.lit(_NO_DATE).cast("timestamp"))
    return F.struct(stamp.alias("ts"), F.col("warc_record_id").alias("id"), F.col("warc_filename").alias("shard"))


def dropped_docs(docs: DataFrame, reason: Column, duplicate_of: Column | None = None) -> DataFrame:
    """Rows of the dropped-documents output for ``docs`` (their ``text``, or its UTF-8 bytes as ``text_bytes``)."""
    size = F.col("text_bytes") if "text_bytes" in docs.columns else F.octet_length("text")
    return docs.select("warc_record_id", "url", "warc_date", "language", "registered_domain",
                       reason.alias("reason"),
                       (duplicate_of if duplicate_of is not None else F.lit(None).cast("string")).alias("duplicate_of"),
                       size.cast("long").alias("text_bytes"))


def normalized(frame: DataFrame, form: str, keep_text: bool) -> DataFrame:
    """``frame`` with ``_normalized`` (a ``form`` of :data:`~pipeline.corpus.normalize.FORMS` of its ``text``),
    computed on the Python workers; ``text`` is dropped unless ``keep_text``."""
    kind = ArrayType(StringType()) if form == "lines" else StringType()
    fields = [field for field in frame.schema.fields if keep_text or field.name != "text"]
    return frame.mapInArrow(partial(N.with_normalized, form=form, keep_text=keep_text),
                            StructType(fields + [StructField("_normalized", kind)]))


class CorpusStage:
    """A stage: ``name`` (its stats key, its checkpoint folder and its entry in ``corpus.stages``) and :meth:`apply`."""

    part, home, setting = "corpus stage", "pipeline.corpus", "corpus.stages"
    name = "stage"

    def __init__(self, settings: Any = None) -> None:
        self.settings = settings  # its section of the corpus settings, if it has one

    @classmethod
    def from_settings(cls, settings: Settings) -> "CorpusStage | None":
        """The stage as the run's settings configure it, or None where they switch it off; by default made with its
        ``corpus.options.<name>`` as keyword arguments."""
        options = settings.corpus.options.get(cls.name, {})
        try:
            return cls(**options)
        except TypeError as exc:
            raise ConfigError(f"corpus.options.{cls.name}: {exc}") from None

    def apply(self, docs: DataFrame) -> StageOutput:
        raise NotImplementedError

    def not_incremental(self) -> str | None:
        """Why a build cannot run this stage over the new documents alone (None: it can, because it decides each
        document by its own columns). A stage of your own says None where that holds."""
        return "it is not known to decide each document by its own columns"

    def keeps_all(self) -> bool:
        """True when :meth:`apply` only adds columns: every document passes with its text unchanged. Such a stage,
        when it is the last, is not checkpointed: the final write runs it."""
        return False

    def removes_only(self) -> bool:
        """True when :meth:`apply`'s documents are its input's, less those in its ``dropped_docs``, with the same
        columns and text. Such a stage's checkpoint holds only what it dropped."""
        return False

    def keeps_text(self) -> bool:
        """True when every document :meth:`apply` passes on has its input's text, and its documents are its
        input's less those in its ``dropped_docs`` (by record id, where ids are unique): while every stage so far
        keeps the text, the index sample after it is the sampled ids it passed on."""
        return self.removes_only() or self.keeps_all()


class CorpusRule(CorpusStage):
    """A stage that drops the documents its condition rejects (:meth:`rejects`, a condition over the documents'
    columns), each with the stage's name as its reason in ``corpus_dropped/``."""

    def rejects(self) -> Column:
        """True for a document the rule drops (null counts as False)."""
        raise NotImplementedError

    def apply(self, docs: DataFrame) -> StageOutput:
        rejected = F.coalesce(self.rejects(), F.lit(False))
        return StageOutput(docs.where(~rejected), dropped_docs(docs.where(rejected), F.lit(self.name)))

    def not_incremental(self) -> str | None:
        return None

    def removes_only(self) -> bool:
        return True


class RecordIds(CorpusStage):
    """One document per WARC-Record-ID, the key of every later stage: the first in :func:`order_key` order is
    kept and the others are dropped as ``duplicate_record_id``. Only needed when the job kept repeated record
    ids (``input.dedup_record_ids`` off); otherwise they are unique already."""

    name = "record_ids"

    @classmethod
    def from_settings(cls, settings: Settings) -> "RecordIds | None":
        return None if settings.input.dedup_record_ids else cls()

    def apply(self, docs: DataFrame) -> StageOutput:
        # Copies with the same order key are the same record read twice; the text's hash breaks the tie
        # between different texts under one id, so the choice does not depend on partitioning.
        window = Window.partitionBy("warc_record_id").orderBy(order_key(), F.xxhash64("text"))
        ranked = docs.withColumn("_rank", F.row_number().over(window))
        kept = ranked.where(F.col("_rank") == 1).drop("_rank")
        dropped = dropped_docs(ranked.where(F.col("_rank") > 1), F.lit("duplicate_record_id"), F.col("warc_record_id"))
        return StageOutput(kept, dropped)

    def keeps_text(self) -> bool:
        return True

    def not_incremental(self) -> str | None:
        return ("a later copy of a record id with an earlier date replaces the copy that the stages after it "
                "already decided")


def key_batch(batch: pa.RecordBatch) -> pa.RecordBatch:
    """A batch of documents as exact dedup hashes them: their :data:`KEY_COLUMNS`, ``text_bytes`` and the hash of
    their normalised text (``_normalized``, :func:`~pipeline.corpus.normalize.text_hash`); the text is left out."""
    text = batch.column(batch.schema.get_field_index("text"))
    narrow = pa.RecordBatch.from_arrays(
        [batch.column(batch.schema.get_field_index(name)) for name in KEY_COLUMNS]
        + [pc.binary_length(text).cast(pa.int64()), text],
        names=[*KEY_COLUMNS, "text_bytes", "text"])
    return next(N.with_normalized(iter([narrow]), "hash", False))


def key_schema(documents: StructType) -> StructType:
    """The schema of :func:`key_batch`'s rows of ``documents``."""
    return StructType([documents[name] for name in KEY_COLUMNS]
                      + [StructField("text_bytes", LongType(), True), StructField("_normalized", StringType(), True)])


class ExactDedup(CorpusStage):
    """Documents with the same normalised text: the first in :func:`order_key` order is kept."""

    name = "exact_dedup"

    @classmethod
    def from_settings(cls, settings: Settings) -> "ExactDedup | None":
        return cls() if settings.corpus.dedup.exact else None

    def _keys(self, docs: DataFrame, hashed: DataFrame | None) -> DataFrame:
        """(id, hash of the normalised text, order, language, and what a dropped document's row gives): the text is
        read, normalised and hashed once, by the tasks that read it where ``hashed`` (:func:`key_batch`'s rows of
        the same documents) is given."""
        if hashed is None:
            hashed = docs.mapInArrow(lambda batches: map(key_batch, batches), key_schema(docs.schema))
        return hashed.select("warc_record_id", F.col("_normalized").alias("_hash"), order_key().alias("_order"),
                             "language", "url", "warc_date", "registered_domain", "text_bytes")

    def apply(self, docs: DataFrame) -> StageOutput:
        return self.apply_new(docs, None, None)

    def apply_new(self, docs: DataFrame, earlier: DataFrame | None, generation: int | None,
                  hashed: DataFrame | None = None) -> StageOutput:
        """The stage over the documents of build ``generation``, against the keys ``earlier`` builds kept (rows of
        ``keys``): each hash keeps its first document in :func:`order_key` order among all builds. A new document
        that comes first takes the keeper's place: the earlier build's documents of that hash are ``demoted``.
        With ``generation`` None the build keeps no keys (``keys`` is None). ``hashed``: the documents as
        :func:`key_batch` makes them in the tasks that read them, so that their text does not leave those tasks."""
        keys = self._keys(docs, hashed).localCheckpoint()
        rows = keys.select("warc_record_id", "_hash", "_order", F.lit(True).alias("_new"),
                           F.lit(None).cast("int").alias("generation"), "language")
        if earlier is not None:
            old = earlier.join(keys.select("_hash").distinct(), "_hash", "left_semi")
            rows = rows.unionByName(old.select("warc_record_id", "_hash", "_order", F.lit(False).alias("_new"),
                                               "generation", "language"))
        # Only the duplicates' (id, keeper) are kept from the ranking; both outputs are joins against them.
        window = Window.partitionBy("_hash").orderBy("_order")
        ranked = (rows.withColumn("_rank", F.row_number().over(window))
                  .withColumn("_keeper", F.first("warc_record_id").over(window))
                  .withColumn("_keeper_new", F.first("_new").over(window))
                  .where(F.col("_rank") > 1).localCheckpoint())
        duplicates = ranked.where("_new").select("warc_record_id", "_keeper")
        duplicates = by_ids(duplicates, duplicates.count())
        kept = docs.join(duplicates, "warc_record_id", "left_anti").select(*docs.columns)
        # the dropped rows from the keys (checkpointed), not from a second read of the documents' text
        dropped = dropped_docs(keys.join(duplicates, "warc_record_id"), F.lit("exact_duplicate"), F.col("_keeper"))
        if generation is None:
            return StageOutput(kept, dropped)
        demoted = (ranked.where(~F.col("_new") & F.col("_keeper_new"))
                   .select("warc_record_id", F.col("_keeper").alias("duplicate_of"), "generation", "language"))
        stored = keys.select("_hash", "_order", "warc_record_id", F.lit(generation).alias("generation"), "language")
        return StageOutput(kept, dropped, keys=stored, demoted=demoted)

    def not_incremental(self) -> str | None:
        return None

    def removes_only(self) -> bool:
        return True


class RepeatedLines(CorpusStage):
    """cc_net: remove every line whose normalised hash is in too many distinct documents.

    Counted per registered domain (site boilerplate) and corpus-wide; lines without a letter are
    never removed; a document left with no line is dropped as ``all_lines_repeated``.
    """

    name = "repeated_lines"
    settings: RepeatedLinesSettings

    @classmethod
    def from_settings(cls, settings: Settings) -> "RepeatedLines | None":
        return cls(settings.corpus.repeated_lines) if settings.corpus.repeated_lines.enabled else None

    def _too_many(self) -> Column:
        rules = [F.lit(False)]
        if self.settings.max_docs_global:
            rules.append(F.col("docs_global") > self.settings.max_docs_global)
        if self.settings.max_docs_domain:
            rules.append(F.col("docs_domain") > self.settings.max_docs_domain)
        condition = rules[0]
        for rule in rules[1:]:
            condition = condition | rule
        if self.settings.min_chars:
            condition = condition & (F.length("_norm") >= self.settings.min_chars)
        # A line without a letter (a number, a date, punctuation) is data, not boilerplate: table
        # cells and list numbers would otherwise collide once digits are normalised to 0.
        return condition & F.col("_norm").rlike(r"\p{L}")

    def apply(self, docs: DataFrame) -> StageOutput:
        # One row per line, normalised once; the counts come from its distinct (document, hash) pairs.
        columns = ["warc_record_id", "url", "language", "registered_domain"]
        exploded = (normalized(docs.select(*columns, "text"), "lines", True)
                    .select(*columns, T.lines(F.col("text")).alias("_lines"), "_normalized")
                    .select(*columns, F.posexplode(F.arrays_zip("_lines", "_normalized")).alias("line_number", "_pair"))
                    .select(*columns, "line_number", F.col("_pair._lines").alias("line"),
                            F.col("_pair._normalized").alias("_norm"))
                    .withColumn("_hash", F.xxhash64("_norm")))
        per_domain = (exploded.select("warc_record_id", "registered_domain", "_hash").distinct()
                      .groupBy("registered_domain", "_hash").agg(F.count(F.lit(1)).alias("docs_domain")))
        # A document has one registered domain, so the corpus-wide count is the sum over domains.
        counts = per_domain.withColumn("docs_global", F.sum("docs_domain").over(Window.partitionBy("_hash")))
        removed = (exploded.join(counts, ["registered_domain", "_hash"]).where(self._too_many())
                   .select("warc_record_id", "url", "language", "registered_domain", "line_number", "line",
                           F.lit("repeated_line").alias("reason"), "docs_global", "docs_domain")
                   .localCheckpoint())
        # Only documents that lost a line are rebuilt: their lines minus the removed positions.
        gone = removed.groupBy("warc_record_id").agg(F.collect_set("line_number").alias("_gone"))
        rebuilt = F.array_join(F.filter(T.lines(F.col("text")), lambda _, i: ~F.array_contains("_gone", i)), "\n")
        joined = (docs.join(gone, "warc_record_id", "left")
                  .withColumn("text", F.when(F.col("_gone").isNull(), F.col("text")).otherwise(rebuilt))
                  .withColumn("lines_removed", F.col("lines_removed") + F.coalesce(F.size("_gone"), F.lit(0)))
                  .drop("_gone"))
        kept = joined.where(F.col("text") != "")
        emptied = dropped_docs(joined.where(F.col("text") == ""), F.lit("all_lines_repeated"))
        return StageOutput(kept, emptied, removed)

    def not_incremental(self) -> str | None:
        return ("a line whose document count passes max_docs_domain or max_docs_global in a later build is removed "
                "from the documents of earlier builds too")


# MinHash functions h_i(x) = (a_i * x + b_i) mod p over 31-bit shingle hashes x: products stay below
# 2**62, so plain long arithmetic (whole-stage codegen, no overflow under ANSI mode) computes them.
_PRIME = 2**31 - 1
_MINHASH_SEED = 20240601


def minhash_coefficients(n: int) -> list[tuple[int, int]]:
    """The fixed (a_i, b_i) of ``n`` MinHash functions: the same on every run and every machine."""
    rng = random.Random(_MINHASH_SEED)
    return [(rng.randrange(1, _PRIME), rng.randrange(0, _PRIME)) for _ in range(n)]


class NearDedup(CorpusStage):
    """MinHash over word shingles, LSH banding with Spark joins, clusters by minimum-label propagation.

    Pairs whose share of equal MinHash values reaches ``near_threshold`` are edges; every
    connected cluster keeps its first document in :func:`order_key` order and the others point
    to it (``duplicate_of``).
    """

    name = "near_dedup"
    settings: DedupSettings

    @classmethod
    def from_settings(cls, settings: Settings) -> "NearDedup | None":
        return cls(settings.corpus.dedup) if settings.corpus.dedup.near else None

    def _signatures(self, docs: DataFrame) -> DataFrame:
        """``_order`` and ``_sig``, the MinHash signature of the document's distinct shingles.

        Each shingle is hashed once; the signature is one aggregation of plain arithmetic over the
        exploded (document, shingle hash) rows."""
        s = self.settings
        hashed = F.array_distinct(F.transform("_shingles", lambda g: F.pmod(F.xxhash64(g), F.lit(_PRIME))))
        text = normalized(docs.select("warc_record_id", "warc_date", "warc_filename", "text"), "text", False)
        rows = (text.select(order_key().alias("_order"), T.words(F.col("_normalized")).alias("_tokens"))
                .select("_order", T.ngrams(F.col("_tokens"), s.shingle_words).alias("_shingles"))
                .select("_order", F.explode(hashed).alias("_x")))
        coefficients = minhash_coefficients(s.bands * s.rows_per_band)
        mins = [F.min(F.pmod(F.col("_x") * F.lit(a) + F.lit(b), F.lit(_PRIME))).alias(f"_m{i}")
                for i, (a, b) in enumerate(coefficients)]
        return (rows.groupBy("_order").agg(*mins)
                .select("_order", F.array(*[f"_m{i}" for i in range(len(coefficients))]).alias("_sig")))

    def _edges(self, signatures: DataFrame) -> DataFrame:
        s = self.settings
        bands = F.array(*[F.xxhash64(F.slice("_sig", b * s.rows_per_band + 1, s.rows_per_band))
                          for b in range(s.bands)])
        keyed = signatures.select("_order", F.posexplode(bands).alias("_band", "_key"))
        a, b = keyed.alias("a"), keyed.alias("b")
        pairs = (a.join(b, (F.col("a._band") == F.col("b._band")) & (F.col("a._key") == F.col("b._key"))
                        & (F.col("a._order") < F.col("b._order")))
                 .select(F.col("a._order").alias("src"), F.col("b._order").alias("dst")).distinct())
        sig = signatures.select("_order", "_sig")
        n_hashes = s.bands * s.rows_per_band
        scored = (pairs.join(sig.withColumnRenamed("_order", "src").withColumnRenamed("_sig", "_sa"), "src")
                  .join(sig.withColumnRenamed("_order", "dst").withColumnRenamed("_sig", "_sb"), "dst"))
        equal = F.size(F.filter(F.zip_with("_sa", "_sb", lambda x, y: x == y), lambda same: same))
        return scored.where(equal >= F.lit(s.near_threshold * n_hashes)).select("src", "dst")

    def _clusters(self, edges: DataFrame) -> DataFrame:
        """node -> label, the smallest node of its connected component (up to ``max_rounds`` rounds)."""
        both = edges.unionByName(edges.select(F.col("dst").alias("src"), F.col("src").alias("dst"))).localCheckpoint()
        labels = both.select(F.col("src").alias("node")).distinct().withColumn("label", F.col("node"))
        for _ in range(self.settings.max_rounds):
            incoming = (both.join(labels.withColumnRenamed("node", "src"), "src")
                        .groupBy(F.col("dst").alias("node")).agg(F.min("label").alias("_candidate")))
            updated = (labels.join(incoming, "node", "left")
                       .select("node", F.least("label", F.coalesce("_candidate", "label")).alias("label"))
                       .localCheckpoint())
            changed = updated.join(labels.withColumnRenamed("label", "_old"), "node") \
                .where(F.col("label") != F.col("_old")).limit(1).count()
            labels = updated
            if not changed:
                break
        return labels

    def apply(self, docs: DataFrame) -> StageOutput:
        labels = self._clusters(self._edges(self._signatures(docs)))
        duplicates = (labels.where(F.col("node") != F.col("label"))
                      .select(F.col("node.id").alias("warc_record_id"), F.col("label.id").alias("_keeper")))
        marked = docs.join(duplicates, "warc_record_id", "left")
        kept = marked.where(F.col("_keeper").isNull()).drop("_keeper")
        dropped = dropped_docs(marked.where(F.col("_keeper").isNotNull()), F.lit("near_duplicate"), F.col("_keeper"))
        return StageOutput(kept, dropped)

    def keeps_text(self) -> bool:
        return True

    def not_incremental(self) -> str | None:
        return ("a new document can join clusters of earlier builds into one, which then keeps only its first "
                "document")


# What the perplexity buckets' percentiles read of the documents (with the record id, to leave out dropped ones).
PERCENTILE_COLUMNS = ("warc_record_id", "language", "perplexity_median")


class Quality(CorpusStage):
    """Quality signals as ``q_*`` columns, the perplexity bucket, and the optional filters and block list."""

    name = "quality"

    def __init__(self, settings: QualitySettings) -> None:
        super().__init__(settings)
        self.blocklist = read_blocklist(settings.url_blocklist)

    @classmethod
    def from_settings(cls, settings: Settings) -> "Quality | None":
        quality = settings.corpus.quality
        return cls(quality) if quality.signals or quality.filters or quality.url_blocklist else None

    def signal_schema(self, documents: StructType) -> StructType:
        """The schema of ``documents`` with the :data:`~pipeline.corpus.signals.SIGNAL_COLUMNS` after theirs."""
        added = [StructField(name, IntegerType() if kind == pa.int32() else DoubleType())
                 for name, kind in signals.SIGNAL_COLUMNS]
        return StructType(documents.fields + added)

    def in_reading(self) -> tuple[Callable, Callable]:
        """What the tasks that read the documents can do for :meth:`apply`: (a function of a record batch of them,
        the schema it makes of theirs), the signals."""
        return partial(signals.signal_batch, ngram_words=self.settings.ngram_words), self.signal_schema

    def _signals(self, docs: DataFrame, signaled: DataFrame | None) -> DataFrame:
        """``docs`` with the :data:`~pipeline.corpus.signals.SIGNAL_COLUMNS`, computed on the Python workers (or
        ``signaled``, the same documents with them from :meth:`in_reading`)."""
        if signaled is None:
            batch_signals, shaped = self.in_reading()
            signaled = docs.mapInArrow(lambda batches: map(batch_signals, batches), shaped(docs.schema))
        return signaled.select("warc_record_id", *[c for c in signaled.columns if c != "warc_record_id"])

    def _perplexity_bucket(self, docs: DataFrame, source: DataFrame) -> DataFrame:
        """``docs`` with ``perplexity_bucket``; the percentiles are those of ``source`` (the same documents
        before the Python pass, so that computing them does not run it again)."""
        if self.settings.perplexity_cuts:
            cuts = docs.sparkSession.createDataFrame(
                [(language, [float(head), float(middle)]) for language, (head, middle)
                 in sorted(self.settings.perplexity_cuts.items())], "language string, _cuts array<double>")
        else:
            low, high = (p / 100 for p in self.settings.perplexity_percentiles)
            cuts = (source.where(F.col("perplexity_median").isNotNull()).groupBy("language")
                    .agg(F.percentile_approx("perplexity_median", F.array(F.lit(low), F.lit(high))).alias("_cuts")))
        ppl = F.col("perplexity_median")
        bucket = (F.when(ppl.isNull() | F.col("_cuts").isNull(), F.lit(None).cast("string"))
                  .when(ppl <= F.col("_cuts")[0], "head").when(ppl <= F.col("_cuts")[1], "middle").otherwise("tail"))
        return docs.join(F.broadcast(cuts), "language", "left").withColumn("perplexity_bucket", bucket).drop("_cuts")

    def _rules(self) -> list[tuple[str, Column]]:
        """(reason, condition) of every enabled rule, in order: the first that holds names the reason."""
        s = self.settings
        rules: list[tuple[str, Column]] = []
        if self.blocklist:
            rules.append(("url_blocklist", F.col("host").isin(self.blocklist)
                          | F.col("registered_domain").isin(self.blocklist)))
        if s.filters:
            rules += [
                ("quality.min_words", F.col("q_words") < s.min_words),
                ("quality.max_words", F.col("q_words") > s.max_words),
                ("quality.mean_word_length", (F.col("q_mean_word_length") < s.min_mean_word_length)
                 | (F.col("q_mean_word_length") > s.max_mean_word_length)),
                ("quality.symbol_word_ratio", F.col("q_symbol_word_ratio") > s.max_symbol_word_ratio),
                ("quality.bullet_lines", F.col("q_bullet_lines") > s.max_bullet_lines),
                ("quality.ellipsis_lines", F.col("q_ellipsis_lines") > s.max_ellipsis_lines),
                ("quality.duplicate_lines", F.col("q_duplicate_lines") > s.max_duplicate_lines),
                ("quality.duplicate_ngrams", F.col("q_duplicate_ngrams") > s.max_duplicate_ngrams),
                ("quality.stop_words", F.coalesce(F.col("q_stop_words") < s.min_stop_words, F.lit(False))),
                ("quality.punctuation_lines", F.col("q_punctuation_lines") < s.min_punctuation_lines),
            ]
            if s.drop_perplexity_tail:
                tail = F.coalesce(F.col("perplexity_bucket") == "tail", F.lit(False))
                rules.append(("quality.perplexity_tail", tail))
        return rules

    def apply(self, docs: DataFrame, source: DataFrame | None = None,
              signaled: DataFrame | None = None) -> StageOutput:
        """``source``: the :data:`PERCENTILE_COLUMNS` of the same documents, read alone so that the percentiles do
        not read their text again (by default ``docs``); ``signaled``: the documents with their signals from the
        tasks that read them (:meth:`in_reading`), so that their text does not pass through the JVM for them."""
        rules = self._rules()
        marked = self._perplexity_bucket(self._signals(docs, signaled), docs if source is None else source)
        if not rules:  # signals only: nothing can be dropped
            return StageOutput(marked)
        reason = F.coalesce(*[F.when(condition, F.lit(name)) for name, condition in rules],
                            F.lit(None).cast("string"))
        # Both outputs read the judged documents: checkpointed, the Python pass runs once.
        judged = marked.withColumn("_reason", reason).localCheckpoint()
        kept = judged.where(F.col("_reason").isNull()).drop("_reason")
        dropped = dropped_docs(judged.where(F.col("_reason").isNotNull()), F.col("_reason"))
        return StageOutput(kept, dropped)

    def keeps_all(self) -> bool:
        return not self._rules()

    def keeps_text(self) -> bool:
        return True

    def not_incremental(self) -> str | None:
        return None if self.settings.perplexity_cuts else (
            "its perplexity buckets are percentiles of the whole corpus (corpus.quality.perplexity_cuts fixes them)")
