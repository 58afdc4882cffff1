"""One explanation as one self-contained HTML file, and the index of several.

The file holds everything: the path (language, page type, each cascade stage tried and why it moved on), the
page as rendered (:mod:`pipeline.explain.view`, in an iframe sandboxed without ``allow-scripts``, its HTML in
``srcdoc``) and the text, each sentence kept or dropped with the filter's verdict on its line
(:mod:`pipeline.explain.verdicts`). It loads nothing and runs nothing: its own Content-Security-Policy allows no
script and no request, and the framed page inherits it.
"""

from __future__ import annotations

import html
import re
from typing import Callable, Iterable

from pipeline.config import Settings
from pipeline.document import Document, Sentence, StageTry
from pipeline.explain.select import group_title
from pipeline.explain.verdicts import Verdict, verdicts
from pipeline.explain.view import Mark, page_document
from pipeline.steps.blocks.extractor import COMMENT, BlockDecisions, written_reading

POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:; base-uri 'none'; form-action 'none'"

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#222;background:#fafafa}
header{padding:.6em 1em;background:#263238;color:#fff}header a{color:#9cf}
header h1{font-size:1.1em;margin:0;word-break:break-all}header p{margin:.2em 0 0;font-size:.9em;color:#cfd8dc}
main{padding:.5em 1em}h2{font-size:1em;margin:.8em 0 .3em}
table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:.15em .45em;vertical-align:top;text-align:left}
.path td:first-child{color:#555;white-space:nowrap}.path{margin-bottom:.4em}
ol.stages{margin:.2em 0;padding-left:1.4em}ol.stages li{margin:.1em 0}
.v{display:inline-block;padding:0 .45em;border-radius:.6em;font-size:.85em;color:#fff;background:#777}
.v-kept{background:#1a9850}.v-filter_overruled{background:#e08214}.v-filtered_too_much,.v-short,.v-empty,
.v-error,.v-timeout,.v-memory{background:#d73027}.v-skipped{background:#999}
.same{color:#1a9850;font-weight:bold}.differs{color:#d73027;font-weight:bold}
.cols{display:flex;gap:1em;align-items:flex-start}.cols>section{flex:1 1 45%;min-width:0}
.cols>section+section{flex-basis:55%}
iframe{width:100%;height:82vh;border:1px solid #999;background:#fff}
.text{max-height:82vh;overflow:auto;background:#fff;border:1px solid #999}
.text table{width:100%;font-size:13px}.text td.n{color:#999;text-align:right}.text td.t{width:50%}
.text td.num{white-space:nowrap;text-align:right;font-variant-numeric:tabular-nums}
.text td.why{font-size:12px;color:#444;min-width:11em}.rule{color:#555;font-variant:small-caps}
.expl{color:#666;font-size:11px}
.s{border-radius:2px}.s-kept{background:#dff0e3}.s-dropped{background:#fbd9d3;text-decoration:line-through}
.s-unscored{background:#eee}.s-overruled{background:#fde6c4}
tr.dropped td.t{color:#8a1c12}
.legend{font-size:12px;margin:.2em 0 .4em}.legend span{display:inline-block;margin-right:.8em}
.key{display:inline-block;width:1.4em;height:.9em;vertical-align:middle;margin-right:.25em;border:2px solid}
.k-main{border-color:#1a9850;background:rgba(26,152,80,.12)}.k-boilerplate{border-color:#d73027;background:rgba(215,48,39,.07)}
.k-comment{border-color:#4575b4;background:rgba(69,117,180,.12)}.k-other{border-color:#984ea3}
.k-filtered{border-color:#1a9850;background:repeating-linear-gradient(135deg,rgba(215,48,39,.3) 0 3px,transparent 3px 9px)}
.note{color:#555;font-size:.9em}pre.stagetext{white-space:pre-wrap;max-height:30em;overflow:auto;background:#fff;
border:1px solid #ddd;padding:.4em}
"""

# A stage's verdict in words (the cascade's reasons: pipeline.steps.cascade).
VERDICTS = {
    "kept": "its text was kept",
    "filter_overruled": "the filter would remove most of its sentences; the block stage keeps its text, the filter's "
                        "removals undone (its own evidence outweighs the filter's)",
    "filtered_too_much": "the filter removed too many of its sentences: the page falls back",
    "empty": "no text",
    "short": "its text looks incomplete against resiliparse's main content",
    "error": "raised an error",
    "timeout": "ran out of time",
    "memory": "ran out of memory",
    "skipped": "passed over",
}
KNOWN_LABELS = ("main", "boilerplate", "comment")


def _e(value) -> str:
    return html.escape(str(value), quote=True)


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


# Where a comment block's text went, by ``extract.comments``.
COMMENT_NOTES = {"separate": "written to the row's comments, not its text", "drop": "written nowhere (extract.comments: drop)",
                 "main": "kept in the text (extract.comments: main)"}


# Why a rule after the classifier left a block out (BlockDecisions.left_out).
LEFT_OUT_NOTES = {"signature": "dropped: a poster's signature on a thread",
                  "quote": "dropped: a reply's quote of a post above it (written once, there)",
                  "modal": "dropped: a pop-up its classes call a modal",
                  "aside_link": "dropped: a link in an aside (a sidebar's list)",
                  "breadcrumb": "dropped: a breadcrumb trail",
                  "facet": "dropped: a catalogue's filter panel",
                  "ad_label": "never kept: an ad slot's label"}


def block_marks(decisions: BlockDecisions, doc: Document, comments: str = "separate") -> list[Mark]:
    """Each block's :class:`Mark`: the stage's label, its probability against the threshold, the structure rules and
    the never-kept parts where they decided, where a reader comment's text went (``comments``: the run's
    ``extract.comments``), and what the filter did to its lines when its text was kept."""
    filtered = _filtered_blocks(decisions, doc) if doc.extractor == "blocks" else {}
    marks = []
    for i, (block, label, prob, keep, shown) in enumerate(zip(decisions.blocks, decisions.labels(), decisions.probs,
                                                                decisions.keep, decisions.shown)):
        left_out = [rule for rule, blocks in (decisions.left_out or {}).items() if blocks[i]]
        notes = [f"{label}: p(main) {prob:.2f}, threshold {decisions.threshold:.2f}"]
        if label == COMMENT:
            notes.append(f"a reader comment: {COMMENT_NOTES[comments]}")
        elif keep and prob < decisions.threshold:
            notes.append("kept by the structure rules (its row, region, heading or section)")
        if block.excluded:
            notes.append("never kept: in the page's footer, a dialog or a menu")
        elif left_out:
            notes.append(LEFT_OUT_NOTES[left_out[0]])
        elif not keep and prob >= decisions.threshold:
            notes.append("dropped by the structure rules")
        if keep and not shown:
            notes.append("not written: blank, or a source link")
        state = filtered.get(i)
        if state:
            notes.append("the perplexity filter dropped " + ("its text" if state == "dropped" else "part of its text"))
        marks.append(Mark(label, "\n".join(notes), state, block.excluded, float(prob)))
    return marks


def _filtered_blocks(decisions: BlockDecisions, doc: Document) -> dict[int, str]:
    """Block index -> ``dropped`` (every sentence of its lines dropped) or ``part`` (some), for the kept text."""
    lines = doc.text.split("\n")
    if len(lines) != len(decisions.lines):
        return {}
    per_line: dict[int, list[bool]] = {}
    for sentence in doc.sentences:
        per_line.setdefault(sentence.paragraph, []).append(sentence.kept)
    counts: dict[int, list[int]] = {}  # block -> [sentences, dropped]
    for line, blocks in enumerate(decisions.line_blocks()):
        kept = per_line.get(line, [])
        for b in blocks:
            entry = counts.setdefault(b, [0, 0])
            entry[0] += len(kept)
            entry[1] += kept.count(False)
    return {b: "dropped" if dropped == total else "part" for b, (total, dropped) in counts.items() if dropped}


def _sentence_class(sentence: Sentence, verdict: Verdict | None) -> str:
    if not sentence.kept:
        return "dropped"
    if verdict is not None and not verdict.kept:
        return "overruled"
    return "unscored" if sentence.perplexity is None else "kept"


def _sentence_title(sentence: Sentence, verdict: Verdict | None) -> str:
    parts = [f"perplexity {_num(sentence.perplexity)}" if sentence.perplexity is not None else "not scored"]
    if not sentence.kept:
        parts.append(f"dropped: {sentence.reason}")
    elif verdict is not None and not verdict.kept:
        parts.append("the filter would drop it; kept: the block stage overruled the filter")
    else:
        parts.append("kept")
    return "; ".join(parts)


def reason_parts(reason: str | None) -> str:
    """A recorded drop reason, its parts named where it has the filter's form (``perplexity:<unit>/<rule>@<threshold>``,
    and whatever else it carries)."""
    if not reason:
        return ""
    match = re.match(r"perplexity:(?P<rule>[^@]+)(?:@(?P<threshold>[\d.eE+]+))?(?P<rest>.*)$", reason)
    if not match:
        return _e(reason)
    parts = [f"rule <b>{_e(match['rule'])}</b>"]
    if match["threshold"]:
        parts.append(f"threshold {float(match['threshold']):,.0f}")
    if match["rest"]:
        parts.append(_e(match["rest"]))
    return f"<code>{_e(reason)}</code> ({', '.join(parts)})"


def text_table(text: str, sentences: list[Sentence], judged: list[Verdict] | None, threshold: float | None,
               short_tokens: int, line_probs: list[float] | None = None) -> str:
    """The text a line a row: each sentence coloured kept, dropped, unscored or overruled, with the filter's verdict
    on its line (its score, the threshold that applied and what decided)."""
    verdict_of = {i: v for v in judged or [] for i in v.sentences}
    by_line: dict[int, list[int]] = {}
    for i, sentence in enumerate(sentences):
        by_line.setdefault(sentence.paragraph, []).append(i)
    rows = []
    offset = 0
    for number, line in enumerate(text.split("\n")):
        start, offset = offset, offset + len(line) + 1
        if not line.strip():
            continue
        members = by_line.get(number, [])
        cells, position = [], start
        for i in sorted(members, key=lambda i: sentences[i].start):
            sentence = sentences[i]
            verdict = verdict_of.get(i)
            span = (f"<span class='s s-{_sentence_class(sentence, verdict)}' title='{_e(_sentence_title(sentence, verdict))}'"
                    f" data-sentence='{i}'>")
            if sentence.start >= position:
                cells.append(_e(text[position:sentence.start]) + span + _e(text[sentence.start:sentence.end]) + "</span>")
                position = sentence.end
            else:  # not located in the text: shown as the splitter gave it
                cells.append(" " + span + _e(sentence.text) + "</span>")
        cells.append(_e(text[position:offset - 1]))
        line_verdicts = list(dict.fromkeys(id(verdict_of[i]) for i in members if i in verdict_of))
        shown = [v for v in judged or [] if id(v) in line_verdicts]
        dropped = any(not sentences[i].kept for i in members)
        why = "<br>".join(f"<b>{'kept' if v.kept else 'dropped'}</b> <span class='rule'>{_e(v.decided_by)}</span>"
                          f"<div class='expl'>{_e(v.explanation(threshold, short_tokens))}</div>" for v in shown)
        other = {sentences[i].reason for i in members if not sentences[i].kept}
        if other:
            why += "".join(f"<br>reason recorded: {reason_parts(r)}" for r in sorted(other))
        if any(_sentence_class(sentences[i], verdict_of.get(i)) == "overruled" for i in members):
            why += "<br>kept all the same: the block stage overruled the filter on this page"
        prob = (f"{line_probs[number]:.2f}" if line_probs is not None and number < len(line_probs) else "")
        rows.append(f"<tr class='{'dropped' if dropped else 'kept'}' data-line='{number}'><td class='n'>{number + 1}</td>"
                    f"<td class='t'>{''.join(cells)}</td>"
                    f"<td class='num'>{'<br>'.join(_num(v.faced) for v in shown)}</td>"
                    f"<td class='num'>{'<br>'.join(_num(v.threshold) for v in shown)}</td>"
                    + (f"<td class='num'>{prob}</td>" if line_probs is not None else "") +
                    f"<td class='why'>{why}</td></tr>")
    head = ("<tr><th>#</th><th>line</th><th>perplexity</th><th>threshold applied</th>"
            + ("<th>block p</th>" if line_probs is not None else "") + "<th>decision</th></tr>")
    return f"<table>{head}{''.join(rows)}</table>" if rows else "<p class='note'>No text.</p>"


def _stage_line(stage: StageTry) -> str:
    words = len(stage.text.split())
    detail = VERDICTS.get(stage.verdict, stage.verdict)
    removed = sum(1 for s in stage.sentences if not s.kept)
    counts = f"; the filter removed {removed} of {len(stage.sentences)} sentences" if stage.sentences else ""
    language = f", language {stage.language.code} {stage.language.score:.2f}" if stage.language else ""
    reason = f" <code>{_e(stage.reason)}</code>" if stage.reason else ""
    return (f"<li><b>{_e(stage.name)}</b> <span class='v v-{_e(stage.verdict)}'>{_e(stage.verdict)}</span>{reason}: "
            f"{_e(detail)} <span class='note'>({words:,} words{_e(language)}{_e(counts)})</span></li>")


def dropped_sentences(doc: Document) -> list[tuple[str, str]]:
    """A page's dropped sentences as the dropped side output holds them (sentence, reason)."""
    return [(s.text, s.reason) for s in doc.sentences if not s.kept]


def explanation(doc: Document, settings: Settings, threshold_of: Callable[[str], float | None],
                row_text: str | None = None, index: str | None = "index.html",
                run_dropped: list[tuple[str, str]] | None = None) -> str:
    """The explanation of one traced page (:class:`~pipeline.explain.trace.TracingLoop`); ``row_text``: the run's
    row ``text`` of the page, and ``run_dropped``: its rows of the dropped side output (sentence, reason), to show
    whether the kept text and the dropped sentences are the same."""
    page = doc.page
    trace = doc.trace
    decisions = doc.blocks.decisions if doc.blocks is not None else None  # the block stage's, of its one parse
    written = written_reading(doc)  # ... when its text is the one kept: its comments and line probabilities
    comments = written.comments if written is not None else None
    language = doc.language
    threshold = threshold_of(doc.language_code) if doc.sentences and not doc.unfiltered else None
    page_type = doc.blocks.page_type if doc.blocks is not None else None
    judged = verdicts(doc.sentences, settings.perplexity, threshold, page_type) if threshold is not None else None
    clean = doc.clean_text
    path = [
        ["outcome", f"<b>{_e(doc.outcome)}</b>"],
        ["language", (f"{_e(language.code)} (fastText {language.score:.2f})" if language else "-")
         + (f"; filter threshold {threshold:,.0f}, rule {_e(settings.perplexity.unit)}/{_e(settings.perplexity.rule)}"
            if threshold is not None else "; no perplexity model for it: its sentences pass unscored"
            if language and doc.sentences and not doc.unfiltered else "")],
        ["page type", _e((doc.blocks.page_type if doc.blocks is not None else None)
                         or "- (the block stage did not read the page)")],
        ["title", _e((doc.blocks.title() if doc.blocks is not None else None) or "-")
         + " <span class='note'>(the row's <code>title</code>)</span>"],
    ]
    if trace is not None and trace.stages:
        items = [_stage_line(stage) for stage in trace.stages]
        path.append(["cascade", f"<ol class='stages'>{''.join(items)}</ol>"])
    path.append(["text kept", (f"<b>{_e(doc.extractor)}</b>'s" if doc.extractor else "none")
                 + (f", fallback reason <code>{_e(doc.fallback_reason)}</code>" if doc.fallback_reason else "")
                 + f"; {len(doc.text.encode()):,} bytes extracted, {len(clean.encode()):,} written"])
    if comments:
        path.append(["comments", f"{len(comments.splitlines()):,} lines of reader comments written to the row's "
                     f"<code>comments</code> ({len(comments.encode()):,} bytes), not to its text"])
    if row_text is not None:
        same = row_text == clean
        path.append(["the run's row", "<span class='same'>the same text as the run's row</span>" if same else
                     "<span class='differs'>DIFFERS from the run's row text</span>: the explanation did not make the "
                     "run's decisions (another configuration or model?)"])
    if run_dropped is not None:
        same = sorted(run_dropped) == sorted(dropped_sentences(doc))
        path.append(["the run's dropped output", f"{len(run_dropped):,} sentences, " + (
            "<span class='same'>the same sentences and reasons as here</span>" if same else
            "<span class='differs'>DIFFERENT sentences or reasons from here</span>")])
    sections = [f"<table class='path'>{''.join(f'<tr><td>{k}</td><td>{v}</td></tr>' for k, v in path)}</table>"]
    text_view = ("<section><h2>The text</h2><div class='legend'><span class='s s-kept'>kept</span> "
                 "<span class='s s-dropped'>dropped</span> <span class='s s-unscored'>not scored</span> "
                 "<span class='s s-overruled'>kept, the filter overruled</span> (hover a sentence for its perplexity)"
                 "</div><div class='text'>"
                 + text_table(doc.text, doc.sentences, judged, threshold, settings.perplexity.short_tokens,
                              written.line_probs if written is not None else None) + "</div></section>")
    if page.extractor is None and doc.html:  # a page the cascade extracts from its HTML
        marks = block_marks(decisions, doc, settings.extract.comments) if decisions is not None else None
        srcdoc = page_document(doc.html, decisions.blocks if decisions else None, marks)
        labels = sorted({m.label for m in marks or []}, key=lambda l: (l not in KNOWN_LABELS, l))
        legend = "".join(f"<span><i class='key k-{_e(l) if l in KNOWN_LABELS else 'other'}'></i>{_e(l)}</span>"
                         for l in labels)
        if marks and any(m.filtered for m in marks):
            legend += "<span><i class='key k-filtered'></i>kept, then dropped by the filter</span>"
        note = ("" if decisions is not None else "<p class='note'>The block stage did not classify this page "
                "(not in the cascade, or it raised): the page without outlines.</p>")
        if decisions is not None and doc.extractor not in (None, "blocks"):
            note = (f"<p class='note'>The outlines are the block stage's decisions; the text kept is "
                    f"{_e(doc.extractor)}'s (the page fell back).</p>")
        legend += "<span>no outline: not a text block (menus, buttons, scripts are skipped)</span>"
        page_view = (f"<section><h2>The page</h2><div class='legend'>{legend} (the badge: the block's p(main); hover for the rest)"
                     f"</div>{note}<iframe sandbox='' referrerpolicy='no-referrer' title='the page' "
                     f"srcdoc='{_e(srcdoc)}'></iframe></section>")
        sections.append(f"<div class='cols'>{page_view}{text_view}</div>")
    else:
        sections.append(f"<p class='note'>A {'page without HTML' if page.extractor is None else _e(page.kind.upper()) + ' record'}: "
                        f"no page to show, only its text.</p>" + text_view)
    if comments:
        sections.append("<details><summary>The reader comments (the row's <code>comments</code>)</summary>"
                        f"<div class='text'><pre>{_e(comments)}</pre></div></details>")
    for stage in (trace.stages if trace is not None else []):
        if stage.text and stage.name != doc.extractor:
            stage_threshold = threshold_of(stage.language.code) if stage.language and stage.sentences else None
            stage_verdicts = (verdicts(stage.sentences, settings.perplexity, stage_threshold, page_type)
                              if stage_threshold is not None else None)
            sections.append(f"<details><summary>The text of <b>{_e(stage.name)}</b>, which was not kept "
                            f"({_e(stage.verdict)})</summary><div class='text'>"
                            + text_table(stage.text, stage.sentences, stage_verdicts, stage_threshold,
                                         settings.perplexity.short_tokens)
                            + "</div></details>")
    back = f" · <a href='{_e(index)}'>all explained pages</a>" if index else ""
    title = page.url or page.record_id
    return (f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'>"
            f"<meta http-equiv='Content-Security-Policy' content=\"{POLICY}\">"
            f"<title>warcplex explain: {_e(title)}</title><style>{STYLE}</style></head><body>"
            f"<header><h1>{_e(title)}</h1><p>{_e(page.record_id)} · {_e(page.warc_date)}{back}</p></header>"
            f"<main>{''.join(sections)}</main></body></html>\n")


def index_page(entries: Iterable[dict], title: str = "warcplex explain") -> str:
    """The index of explained pages: each entry's ``file``, ``url``, ``group``, ``outcome``, ``extractor``,
    ``fallback_reason``, ``language``, ``written`` and ``extracted`` bytes, and ``same`` (the kept text equals the run's row; None: no row to compare)."""
    rows = []
    for entry in entries:
        same = entry.get("same")
        rows.append("<tr>" + "".join(f"<td>{cell}</td>" for cell in (
            f"<a href='{_e(entry['file'])}'>{_e(entry.get('url') or entry.get('record_id'))}</a>",
            _e(group_title(entry["group"]) if entry.get("group") else ""), _e(entry.get("outcome", "")), _e(entry.get("extractor") or "-"),
            _e(entry.get("fallback_reason") or ""), _e(entry.get("language") or ""),
            f"{entry['written']:,} of {entry['extracted']:,}" if entry.get("extracted") else "",
            "" if same is None else "<span class='same'>same</span>" if same else "<span class='differs'>differs</span>",
        )) + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in ("page", "outcome group", "outcome", "text from", "fallback reason",
                                             "language", "bytes written of extracted", "as the run"))
    return (f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'>"
            f"<meta http-equiv='Content-Security-Policy' content=\"{POLICY}\"><title>{_e(title)}</title>"
            f"<style>{STYLE}</style></head><body><header><h1>{_e(title)}</h1></header><main>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></main></body></html>\n")
