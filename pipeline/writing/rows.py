"""The rows warcplex writes: the page corpus, the dropped sentences and the sentence side output."""

from __future__ import annotations

import datetime as dt
import re
from typing import Iterator

import pyarrow as pa

from pipeline import parts
from pipeline.config import ExtractSettings
from pipeline.document import Document, visible_lines
from pipeline.steps.blocks.extractor import written_reading
from pipeline.steps.extractors import Extractor, ResiliparseExtractor
from pipeline.lm_text import lm_tokens
from pipeline.perplexity_rule import median


def _schema(**fields: pa.DataType) -> pa.Schema:
    return pa.schema(list(fields.items()))


# WARC-Date as a UTC timestamp (microseconds, Parquet's TIMESTAMP(isAdjustedToUTC)); null when unparseable.
WARC_DATE_TYPE = pa.timestamp("us", tz="UTC")

PAGE_SCHEMA = _schema(
    warc_record_id=pa.string(), url=pa.string(), warc_date=WARC_DATE_TYPE, warc_filename=pa.string(),
    language_score=pa.float32(), text=pa.string(), comments=pa.string(), n_sentences=pa.int32(), n_sentences_kept=pa.int32(),
    perplexity_median=pa.float32(), extractor=pa.string(), fallback_reason=pa.string(), page_type=pa.string(), title=pa.string(),
    html_bytes=pa.int64(), text_bytes_raw=pa.int64(), text_bytes_clean=pa.int64())

# Side output (`output.dropped`) of every dropped sentence with its score and reason.
DROPPED_SCHEMA = _schema(warc_record_id=pa.string(), url=pa.string(), sentence=pa.string(), perplexity=pa.float32(),
                         reason=pa.string(), extractor=pa.string(), distance=pa.float32())

# Side output (`output.sentences`) of every sentence of every page that reached the filter,
# scored or not: what `warcplex sweep` re-filters and the index statistics are built from.
SENTENCE_SCHEMA = _schema(warc_record_id=pa.string(), paragraph=pa.int32(), position=pa.int32(),
                          sentence=pa.string(), n_tokens=pa.int32(), perplexity=pa.float32(), kept=pa.bool_())


class VisibleText:
    """A page's tag-stripped text: resiliparse without main-content detection, the paper's input.

    The text of an extractor whose text already is that text (:attr:`~pipeline.steps.extractors.Extractor
    .visible_text`: the ``conservative`` stage, WET input) is reused; any other extractor's page is parsed a
    second time, and its blank-looking lines closed up as every stage's text is
    (:func:`~pipeline.document.visible_lines`).
    """

    def __init__(self, settings: ExtractSettings) -> None:
        self.extractor = ResiliparseExtractor(settings, main_content=False)

    def row(self, cleaned: Document) -> dict:
        if parts.find(Extractor, cleaned.extractor).visible_text:
            text = cleaned.text
        else:
            text = visible_lines(self.extractor.plain_text(cleaned.html))
        return {"warc_record_id": cleaned.page.record_id, "text": text}


# ClueWeb09's WARC/0.18 writes the day of the year where the day of the month goes: 2008-10-294T05:21:46-0700.
_DAY_OF_YEAR = re.compile(r"(\d{4})-\d{2}-(\d{3})(T.*)")


def warc_timestamp(value: str) -> dt.datetime | None:
    """A record's WARC-Date as an aware UTC datetime: ISO 8601 (``2024-05-20T09:00:37Z``, WARC/1.1's fractional
    seconds, an offset), an ARC file's 14 digits (``20080430204825``) or ClueWeb09's day of the year
    (:data:`_DAY_OF_YEAR`); None when it is none of them."""
    value = value.strip()
    try:
        if len(value) == 14 and value.isdigit():
            return dt.datetime.strptime(value, "%Y%m%d%H%M%S").replace(tzinfo=dt.timezone.utc)
        quirk = _DAY_OF_YEAR.fullmatch(value)
        if quirk:
            year, day, rest = quirk.groups()
            day_of_year = dt.date(int(year), 1, 1) + dt.timedelta(days=int(day) - 1)
            value = f"{day_of_year.isoformat()}{rest}"
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed.replace(tzinfo=dt.timezone.utc) if parsed.tzinfo is None else parsed.astimezone(dt.timezone.utc)


def page_row(cleaned: Document, shard: str) -> dict:
    scores = [s.perplexity for s in cleaned.sentences if s.perplexity is not None]
    text = cleaned.clean_text
    written = written_reading(cleaned)  # the block stage's reading, when its text is the row's: its comments
    return {
        "warc_record_id": cleaned.page.record_id,
        "url": cleaned.page.url,
        "warc_date": warc_timestamp(cleaned.page.warc_date),
        "warc_filename": shard,
        "language_score": cleaned.language.score if cleaned.language else 0.0,
        "text": text,
        "comments": (written.comments or None) if written is not None else None,
        "n_sentences": len(cleaned.sentences),
        "n_sentences_kept": sum(1 for s in cleaned.sentences if s.kept),
        "perplexity_median": median(scores),
        "extractor": cleaned.extractor,
        "fallback_reason": cleaned.fallback_reason,
        "page_type": cleaned.blocks.page_type if cleaned.blocks is not None else None,
        "title": cleaned.blocks.title() if cleaned.blocks is not None else None,
        "html_bytes": len(cleaned.page.html),
        "text_bytes_raw": len(cleaned.text.encode("utf-8")),
        "text_bytes_clean": len(text.encode("utf-8")),
    }


def dropped_rows(cleaned: Document) -> Iterator[dict]:
    for sentence in cleaned.sentences:
        if not sentence.kept:
            yield {"warc_record_id": cleaned.page.record_id, "url": cleaned.page.url,
                   "sentence": sentence.text, "perplexity": sentence.perplexity,
                   "reason": sentence.reason, "extractor": cleaned.extractor, "distance": sentence.distance}


def sentence_rows(cleaned: Document) -> Iterator[dict]:
    for position, sentence in enumerate(cleaned.sentences):
        n_tokens = sentence.n_tokens if sentence.n_tokens is not None else len(lm_tokens(sentence.text))
        yield {"warc_record_id": cleaned.page.record_id, "paragraph": sentence.paragraph, "position": position,
               "sentence": sentence.text, "n_tokens": n_tokens,
               "perplexity": sentence.perplexity, "kept": sentence.kept}
