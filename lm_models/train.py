"""Train, evaluate and document one KenLM model per language.

    python lm_models/train.py model en      # work/en/train.txt -> en/en.3gram.trie.bin + card
    python lm_models/train.py registry      # conf/models.yaml from the cards
    python lm_models/train.py card en       # the card's README.md and lm_models/README.md's tables, from
                                            # card.json, webeval.json and conf/models.yaml
    python lm_models/train.py sanity en     # clean sentence vs boilerplate perplexities

Run ``corpora.py`` first (the Makefile does both).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

from pipeline.lm.train import arpa_counts, percentile
from pipeline.model_cache import file_sha256
from pipeline.lm_text import NORMALIZATION_VERSION
from pipeline.perplexity_rule import perplexity as scored_perplexity
from pipeline.perplexity_rule import perplexity_of

WORK = HERE / "work"
BIN = Path(os.environ.get("KENLM_BIN", HERE / "tools" / "bin"))
ORDER = 3  # default n-gram order; ORDERS overrides it per language
# Chinese, Japanese and Korean are scored on characters (pipeline.lm_text): 3 characters are
# little context, and order 5 measured slightly better on the web pages (zh AUC 0.745 -> 0.746).
ORDERS: dict[str, int] = {"zh": 5, "ja": 5, "ko": 5}
LMPLZ_MEMORY = "4G"
QUANT_BITS = 8
BACKOFF_BITS = 8

# Pruning thresholds per order (lmplz --prune): an n-gram whose count is <= the
# threshold is dropped. Tuned so that all models fit the 40 MB budget.
PRUNE = {
    "en": [0, 0, 1],
    "de": [0, 1, 1],
    "fr": [0, 1, 1],
    "es": [0, 1, 1],
    "it": [0, 1, 1],
    "ru": [0, 1, 1],
}
DEFAULT_PRUNE = [0, 1, 1]

LANG_NAMES = {"en": "English", "de": "German", "fr": "French", "es": "Spanish",
              "it": "Italian", "ru": "Russian", "zh": "Chinese", "ja": "Japanese",
              "pt": "Portuguese", "nl": "Dutch", "pl": "Polish", "cs": "Czech",
              "tr": "Turkish", "id": "Indonesian", "vi": "Vietnamese", "sv": "Swedish",
              "hu": "Hungarian", "el": "Greek", "ko": "Korean", "uk": "Ukrainian",
              "ro": "Romanian", "da": "Danish", "fi": "Finnish"}

SANITY = json.loads((HERE / "sanity.json").read_text(encoding="utf-8"))
SANITY_CLEAN: dict[str, str] = SANITY["clean"]
SANITY_BOILERPLATE: dict[str, list[str]] = SANITY["boilerplate"]


def boilerplate_for(lang: str) -> list[str]:
    """English boilerplate (web pages mix languages) plus the language's own."""
    own = SANITY_BOILERPLATE.get(lang, []) if lang != "en" else []
    return SANITY_BOILERPLATE["en"] + own


def order_of(lang: str) -> int:
    return ORDERS.get(lang, ORDER)


def model_path(lang: str) -> Path:
    return HERE / lang / f"{lang}.{order_of(lang)}gram.trie.bin"


def perplexity(model, sentence: str) -> float:
    """The scorer's perplexity of ``sentence`` (pipeline.steps.perplexity)."""
    return scored_perplexity(model, sentence)[0]


def evaluate(model, lines: list[str]) -> dict:
    ppl, total_lp, total_tok, oov = [], 0.0, 0, 0
    for line in lines:
        tokens = line.split()
        lp = model.score(line, bos=True, eos=True)
        ppl.append(perplexity_of(lp, len(tokens)))
        total_lp += lp
        total_tok += len(tokens) + 1
        oov += sum(1 for t in tokens if t not in model)
    ppl.sort()
    return {
        "sentences": len(lines),
        "tokens": total_tok - len(lines),
        "oov_rate": round(oov / max(1, total_tok - len(lines)), 5),
        "mean": round(statistics.fmean(ppl), 2),
        "median": round(percentile(ppl, 0.5), 2),
        "p95": round(percentile(ppl, 0.95), 2),
        "corpus_perplexity": round(10 ** (-total_lp / total_tok), 2),
    }


def train(lang: str, prune: list[int] | None = None, keep_arpa: bool = False,
          order: int | None = None) -> dict:
    import kenlm

    if order is not None:
        ORDERS[lang] = order
    order = order_of(lang)
    prune = prune or PRUNE.get(lang, DEFAULT_PRUNE)[:order]
    prune = prune + [prune[-1]] * (order - len(prune))
    work = WORK / lang
    train_txt, held_txt = work / "train.txt", work / "heldout.txt"
    meta = json.loads((work / "sources.json").read_text(encoding="utf-8"))
    tmp = work / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    arpa = work / f"{lang}.arpa"
    out = model_path(lang)
    out.parent.mkdir(parents=True, exist_ok=True)

    t0 = time.time()
    lmplz = [str(BIN / "lmplz"), "-o", str(order), "--prune", *map(str, prune),
             "-S", LMPLZ_MEMORY, "-T", str(tmp) + "/", "--text", str(train_txt),
             "--arpa", str(arpa)]
    subprocess.run(lmplz, check=True, stderr=open(work / "lmplz.log", "w"))
    build = [str(BIN / "build_binary"), "-q", str(QUANT_BITS), "-b", str(BACKOFF_BITS),
             "-T", str(tmp) + "/", "-S", "1G", "trie", str(arpa), str(out)]
    subprocess.run(build, check=True, stdout=open(work / "build_binary.log", "w"),
                   stderr=subprocess.STDOUT)
    seconds = round(time.time() - t0, 1)
    counts = arpa_counts(arpa)
    if not keep_arpa:
        arpa.unlink()
    shutil.rmtree(tmp, ignore_errors=True)

    model = kenlm.Model(str(out))
    held = held_txt.read_text(encoding="utf-8").splitlines()
    ev = evaluate(model, held)
    clean = SANITY_CLEAN.get(lang)
    sanity = {"clean": {clean: round(perplexity(model, clean), 1)} if clean else {},
              "boilerplate": {s: round(perplexity(model, s), 1) for s in boilerplate_for(lang)}}
    card = {
        "language": lang,
        "path": str(out.relative_to(REPO)),
        "bytes": out.stat().st_size,
        "sha256": file_sha256(out),
        "order": order,
        "pruning": {"lmplz_prune": prune,
                    "meaning": "n-grams of order k with count <= prune[k-1] are dropped"},
        "smoothing": "modified Kneser-Ney (lmplz), interpolated unigrams",
        "binary": {"type": "trie", "quantization_bits": QUANT_BITS,
                   "backoff_bits": BACKOFF_BITS, "kenlm": "0.3.0 (PyPI sdist)"},
        "vocab_size": counts.get(1),
        "ngram_counts": {str(k): v for k, v in sorted(counts.items())},
        "normalization_version": NORMALIZATION_VERSION,
        "normalization": "pipeline.lm_text.normalize_for_lm",
        "training": {"sentences": meta["train_sentences"], "tokens": meta["train_tokens"],
                     "seed": meta["seed"], "filters": meta["filters"]},
        "heldout": {"rule": meta["heldout_rule"], **ev,
                    "perplexity_formula": "10 ** (-model.score(normalize_for_lm(s), "
                                          "bos=True, eos=True) / (len(tokens) + 1))"},
        "threshold_guess": int(round(ev["p95"] / 100.0) * 100) or 100,
        "sanity": sanity,
        "corpora": [{k: s[k] for k in ("name", "registry", "package", "version", "licence",
                                       "description", "sentences",
                                       "unique_sentences_added")}
                    for s in meta["sources"]],
    }
    (out.parent / "card.json").write_text(json.dumps(card, indent=2, ensure_ascii=False) + "\n",
                                          encoding="utf-8")
    (out.parent / "README.md").write_text(render_card(card), encoding="utf-8")
    print(f"train[{lang}]: {out.name} {card['bytes']/1e6:.2f} MB vocab={card['vocab_size']} "
          f"heldout mean={ev['mean']} median={ev['median']} p95={ev['p95']} "
          f"({seconds}s)", file=sys.stderr)
    return card


_UI_LIMIT = ("Limit found in the sanity check: software help is full of UI instructions, "
             "so this language's own \"click here to ...\" phrases score as ordinary "
             "text (lower than a clean news sentence); English-language boilerplate and "
             "navigation lines score far above clean text. ")

QUALITY = {
    "en": ("Edited English prose only: political addresses (1790-present), the Brown "
           "corpus (1961 American English across genres), 19th-century novels (Austen, "
           "Melville, the Gutenberg books in Norvig's big.txt), and a modern-English "
           "Bible. "
           "It is heavy on formal and older registers: modern web vocabulary (product "
           "names, internet terms, recent events) is often out of vocabulary or rare and "
           "scores worse than it should, so expect clean modern web sentences to sit "
           "above the held-out figures. Modern software documentation was tried as an "
           "extra source and dropped because it made boilerplate (\"All rights "
           "reserved\", \"Click here to subscribe\") look normal; WordNet's glosses "
           "lowered the perplexity of web text but more that of boilerplate (web AUC "
           "0.671 -> 0.644) and were dropped too."),
    "de": ("Mostly technical documentation translated from English (Debian manuals, "
           "LibreOffice, GIMP, LilyPond and KiCad help, man pages) plus German fortune "
           "cookies (quotes, anecdotes, poems, some in pre-1901 spelling). Sentences "
           "without German function words or with more English than German function words "
           "were dropped, but untranslated terms, command names and UI labels remain "
           "frequent. General news or literary German scores higher than technical prose. "
           + _UI_LIMIT + "Calibrate the threshold on real data."),
    "fr": ("Technical documentation translated from English only (Debian manuals, "
           "LibreOffice, GIMP, LilyPond and KiCad help, aptitude manual, man pages): no "
           "clean general French prose was found in the reachable registries. Sentences "
           "without French function words or with more English than French function words "
           "were dropped, but untranslated terms, command names and UI labels remain "
           "frequent. General news or literary French scores higher than technical prose. "
           + _UI_LIMIT + "Calibrate the threshold on real data."),
    "es": ("Mostly technical documentation translated from English (Debian manuals, "
           "LibreOffice, GIMP, LilyPond and KiCad help, aptitude manual, man pages), plus "
           "the Reina-Valera 1909 Bible (archaic vocabulary and orthography, e.g. the "
           "preposition written \"á\") and Spanish proverbs and quotes (fortunes-es, "
           "offensive section excluded). Sentences without Spanish function words or with "
           "more English than Spanish function words were dropped, but untranslated terms, "
           "command names and UI labels remain frequent. " + _UI_LIMIT
           + "Calibrate the threshold on real data."),
    "it": ("Mostly technical documentation translated from English (Debian manuals, "
           "LibreOffice, GIMP, LilyPond and KiCad help, aptitude manual, man pages) plus "
           "Italian fortune cookies (quotes, jokes). Sentences without Italian function "
           "words or with more English than Italian function words were dropped, but "
           "untranslated terms, command names and UI labels remain frequent. "
           + _UI_LIMIT + "Calibrate the threshold on real data."),
    "ru": ("Mostly technical documentation translated from English (Debian handbook, "
           "maintainers' guide and FAQ, LibreOffice, GIMP and KiCad help, aptitude manual, "
           "man pages) plus Russian fortune cookies (aphorisms, quotes, jokes). Sentences "
           "without Russian function words or with more English than Russian function "
           "words were dropped, but untranslated terms (in Latin script), command names "
           "and UI labels remain frequent. " + _UI_LIMIT
           + "Calibrate the threshold on real data."),
}


def quality_text(lang: str) -> str:
    if lang in QUALITY:
        return QUALITY[lang]
    name = LANG_NAMES.get(lang, lang)
    script = ""
    if lang in ("zh", "ja", "ko"):
        script = (f" {name} is written without spaces between words: `normalize_for_lm` makes "
                  "every Han, kana and hangul character a token of its own, so this is a "
                  "character n-gram model (no word segmenter is needed at training or "
                  "scoring time).")
    return (f"Technical documentation translated from English only (the {name} translations "
            "of the LibreOffice help, Debian manuals and man pages, and where Debian has them "
            "the GIMP, KiCad and LilyPond manuals and fortune cookies; see the table): no clean "
            f"general {name} prose was found in the reachable registries. Sentences with more "
            "English than own-language function words (or, for CJK, fewer than 60% of letters "
            "in the script) were dropped, but command names, UI labels and untranslated terms "
            "remain frequent, and general news or literary text scores higher than technical "
            "prose." + script + " " + _UI_LIMIT + "Calibrate the threshold on real data.")


def webeval_for(c: dict) -> dict | None:
    """The web-page measurement of this very binary (lm_models/webeval.py --write), if any."""
    path = HERE / c["language"] / "webeval.json"
    if not path.exists():
        return None
    w = json.loads(path.read_text(encoding="utf-8"))
    return w if w.get("model_sha256") == c["sha256"] else None


def render_webeval(c: dict) -> str:
    w = webeval_for(c)
    if w is None:
        return ("\n## Web pages\n\nNot measured for this binary: run "
                f"`python lm_models/webeval.py {c['language']} --write` with ../shared/bench present.\n")
    h = w["heldout"]
    m, b = h["main_lines"], h["boilerplate_lines"]
    auc = h["auc_boilerplate_above_main"]
    d = w["dev_truth_sentences"]
    if not m["lines"]:
        measured = (f"No held-out bench page in this language ({w['pages']['dev']} dev pages): "
                    "the model's separation of web text is **unmeasured**.")
    else:
        measured = f"""{w['pages']['heldout']} held-out pages.

| lines | count | median | p75 | p90 | p95 |
|---|---|---|---|---|---|
| main (truth) | {m['lines']:,} | {m['p50']:,} | {m['p75']:,} | {m['p90']:,} | {m['p95']:,} |
| boilerplate | {b['lines']:,} | {b['p50']:,} | {b['p75']:,} | {b['p90']:,} | {b['p95']:,} |

OOV rate of the main lines {h['main_oov_rate']:.2%}. ROC AUC of perplexity as a
boilerplate score (boilerplate above main): **{auc if auc is not None else 'n/a'}**."""
    dev = (f"Dev pages ({w['pages']['dev']}, the rest): {d['sentences']:,} truth sentences, "
           f"per-sentence perplexity p50 {d['p50']:,}, p90 {d['p90']:,}, p95 {d['p95']:,}, "
           f"p99 {d['p99']:,}." if d["sentences"] else "No dev page in this language.")
    return f"""
## Web pages (held-out bench truth)

Measured by `lm_models/webeval.py` on the full-text bench pages of this language that the
block classifier does not train on ({w['heldout_rule']}). Main lines are the truth's
lines; boilerplate lines are the lines of the page's all-text (resiliparse,
`main_content=False`) that are not in the truth. Per-line perplexity, scorer's formula.

{measured}

{dev}
"""


REGISTRY = REPO / "conf" / "models.yaml"


def registry_entries() -> dict:
    """conf/models.yaml's entries by language (the registry the pipeline reads)."""
    import yaml

    return (yaml.safe_load(REGISTRY.read_text(encoding="utf-8")) or {}).get("models", {})


def provenance(entry: dict) -> str:
    """How a registry threshold was set, in a few words: calibrated (objective, pages), borrowed, or provisional."""
    calibration, guess = entry.get("calibration"), entry.get("provisional")
    if calibration:
        objective = str(calibration.get("objective", ""))
        if objective.startswith("not calibrated"):
            return "borrowed"
        kind = ("corpus objective" if objective.startswith("boilerplate_removed")
                else "snippet F" if objective == "snippet_f" else objective.replace("_", " "))
        rule = f", {calibration['rule']} rule" if calibration.get("rule") else ", per-sentence rule"
        return f"calibrated: {kind}, {calibration.get('pages', 0):,} pages{rule}"
    if guess:
        method = str(guess.get("method", ""))
        return "provisional: dev p95" if method.startswith("95th percentile of the per-sentence") else \
            "provisional: scaled" if "ratio" in method else "provisional: own p95"
    return "not in the registry"


def render_threshold(lang: str) -> str:
    """The card's paragraph on the registry's threshold for ``lang`` (conf/models.yaml)."""
    entry = registry_entries().get(lang)
    if not entry:
        return "This model is not in `conf/models.yaml`: the pipeline does not use it."
    calibration, guess = entry.get("calibration") or {}, entry.get("provisional") or {}
    how = (calibration.get("objective") if calibration else guess.get("method")) or "not recorded"
    return (f"`conf/models.yaml` drops a unit above **{entry['threshold']:,}** ({provenance(entry)}). "
            f"How it was set: {how}. `docs/models.md` explains the calibration and the rule that applies it.")


def render_card(c: dict) -> str:
    lang = c["language"]
    h = c["heldout"]
    rows = "\n".join(
        f"| {s['name']} | {s['registry']}: `{s['package']}` {s['version']} | {s['licence']} "
        f"| {s['description']} | {s['unique_sentences_added']:,} |"
        for s in c["corpora"])
    counts = ", ".join(f"{k}-grams: {v:,}" for k, v in c["ngram_counts"].items())
    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    sanity = "\n".join(f"| clean | {cell(s)} | {p:,.1f} |"
                       for s, p in c["sanity"]["clean"].items())
    sanity += "\n" + "\n".join(f"| boilerplate | {cell(s)} | {p:,.1f} |"
                                for s, p in c["sanity"]["boilerplate"].items())
    clean_ppl = next(iter(c["sanity"]["clean"].values()), None)
    note = ""
    if clean_ppl is not None and clean_ppl > c["threshold_guess"]:
        note = (f"\n**Note:** the clean sentence above ({clean_ppl:,.0f}) scores above the "
                f"corpus's own 95th percentile ({c['threshold_guess']:,}): this corpus is "
                "narrower than general prose, so calibrate before use.\n")
    return f"""# {LANG_NAMES.get(lang, lang)} KenLM model (`{lang}`)

`{c['path']}` — {c['order']}-gram, modified Kneser-Ney, KenLM trie binary with
{c['binary']['quantization_bits']}-bit probabilities and {c['binary']['backoff_bits']}-bit backoffs.
Generated by `lm_models/train.py`; rebuild with `make models` (see `../README.md`).

| | |
|---|---|
| size on disk | {c['bytes']:,} bytes ({c['bytes']/2**20:.2f} MiB) |
| sha256 | `{c['sha256']}` |
| order | {c['order']} |
| pruning | `lmplz --prune {' '.join(map(str, c['pruning']['lmplz_prune']))}` ({c['pruning']['meaning']}) |
| vocabulary | {c['vocab_size']:,} types (incl. `<s>`, `</s>`, `<unk>`) |
| n-grams | {counts} |
| training text | {c['training']['sentences']:,} sentences, {c['training']['tokens']:,} tokens |
| normalisation | `normalize_for_lm`, NORMALIZATION_VERSION = {c['normalization_version']} |

## Training corpora

All text comes from pinned registry packages; see `lm_models/corpora.py` for the
extraction. Sentences were split with `sentencex`, normalised, filtered
(3–200 tokens, at least half alphabetic{', language stop-word check' if lang != 'en' else ''}),
deduplicated and shuffled with a fixed seed.

| source | package | licence | content | unique sentences |
|---|---|---|---|---|
{rows}

## Held-out perplexity

{h['sentences']:,} held-out sentences ({h['rule']}), from the same corpora,
never trained on. Per-sentence perplexity uses the scorer's formula
`{h['perplexity_formula']}`.

| mean | median | 95th percentile | corpus-level | OOV rate |
|---|---|---|---|---|
| {h['mean']:,} | {h['median']:,} | {h['p95']:,} | {h['corpus_perplexity']:,} | {h['oov_rate']:.2%} |

The 95th percentile rounded to the nearest 100 is **{c['threshold_guess']:,}**. It is far
too low for web text and is only the last fallback of the registry's threshold (below).

## Threshold

{render_threshold(lang)}

## Sanity check

| kind | sentence | perplexity |
|---|---|---|
{sanity}
{note}
{render_webeval(c)}
## Quality and limits

{quality_text(lang)}

The held-out set comes from the same sources as the training set, so its perplexity
is optimistic for web text. Boilerplate detection relies on the model: short
navigation lines made of common words can still get moderate perplexities.
"""


REGISTRY_HEADER = """\
# Per-language KenLM models (built by `make models`, see lm_models/README.md).
# threshold: drop sentences whose perplexity is above it.
# Entries with a `calibration` block were set by `warcplex calibrate --write`; `make models`
# keeps them. Entries with a `provisional` block hold an UNCALIBRATED first guess, made as
# that block's `method` says (lm_models/README.md, "Provisional thresholds").
"""

MIN_DEV_SENTENCES = 50  # fewer dev truth sentences than this: the web percentile is too noisy
CHARACTER_LANGUAGES = ("zh", "ja", "ko")  # one LM token per character (pipeline normalisation)


def _web_ratio(lang: str) -> float | None:
    """Median of (web dev-truth p95) / (own held-out p95) over the measured languages
    tokenised like ``lang`` (characters or words: their perplexity scales differ)."""
    unit = lang in CHARACTER_LANGUAGES
    ratios = []
    for card_path in sorted(HERE.glob("*/card.json")):
        c = json.loads(card_path.read_text(encoding="utf-8"))
        w = webeval_for(c)
        if ((c["language"] in CHARACTER_LANGUAGES) == unit and w
                and w["dev_truth_sentences"]["sentences"] >= MIN_DEV_SENTENCES):
            ratios.append(w["dev_truth_sentences"]["p95"] / c["heldout"]["p95"])
    return statistics.median(ratios) if ratios else None


def web_percentiles(c: dict) -> dict[int, float] | None:
    """The per-sentence perplexity percentiles of the truth text of dev bench pages in this language, or None
    with fewer than MIN_DEV_SENTENCES sentences (percentile mode then treats the language as unscored)."""
    w = webeval_for(c)
    if not w or w["dev_truth_sentences"]["sentences"] < MIN_DEV_SENTENCES:
        return None
    return {int(k[1:]): v for k, v in w["dev_truth_sentences"].items() if k.startswith("p")}


def provisional(c: dict) -> tuple[float, dict, dict | None]:
    """(threshold, provenance, percentiles) for a model no one has calibrated yet."""
    w = webeval_for(c)
    if w and w["dev_truth_sentences"]["sentences"] >= MIN_DEV_SENTENCES:
        d = w["dev_truth_sentences"]
        pct = {int(k[1:]): v for k, v in d.items() if k.startswith("p")}
        return (d["p95"], {"method": "95th percentile of the per-sentence perplexity of the "
                           "truth text of dev bench pages (not held out) in this language",
                           "sentences": d["sentences"], "pages": w["pages"]["dev"]}, pct)
    ratio = _web_ratio(c["language"])
    if ratio is None:
        return (float(c["threshold_guess"]), {"method": "95th percentile of the model's own "
                "held-out corpus sentences, rounded to 100 (no web measurement available)"}, None)
    value = round(c["heldout"]["p95"] * ratio, 1)
    n = w["dev_truth_sentences"]["sentences"] if w else 0
    unit = "character" if c["language"] in CHARACTER_LANGUAGES else "word"
    return (value, {"method": f"own held-out corpus p95 ({c['heldout']['p95']}) times the median "
                    f"web/own p95 ratio ({ratio:.2f}) of the {unit}-level languages with at "
                    f"least {MIN_DEV_SENTENCES} dev truth sentences (this one has {n})"}, None)


def registry(langs: list[str]) -> None:
    """Write conf/models.yaml: path and sha256 of each model; keep calibrated thresholds."""
    import yaml

    out = REPO / "conf" / "models.yaml"
    tree = (yaml.safe_load(out.read_text(encoding="utf-8")) if out.exists() else None) or {}
    models = tree.setdefault("models", {})
    for lang in langs:
        card_path = HERE / lang / "card.json"
        if not card_path.exists():
            continue
        c = json.loads(card_path.read_text(encoding="utf-8"))
        entry = models.setdefault(lang, {})
        calibrated = "calibration" in entry
        if calibrated and entry.get("sha256") not in (None, c["sha256"]):
            print(f"registry: WARNING {lang}: model changed since calibration; "
                  f"keeping threshold {entry.get('threshold')}, re-run `warcplex calibrate`",
                  file=sys.stderr)
        entry["path"] = c["path"]
        entry["sha256"] = c["sha256"]
        if not calibrated:
            entry["threshold"], entry["provisional"], _ = provisional(c)
            entry.pop("percentiles", None)
        pct = web_percentiles(c)  # percentile mode's thresholds, unless calibration set them from its own pages
        if pct and "percentiles" not in entry:
            entry["percentiles"] = pct
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(REGISTRY_HEADER + yaml.safe_dump(tree, sort_keys=True, allow_unicode=True),
                   encoding="utf-8")
    print(f"registry: wrote {out}", file=sys.stderr)


README = HERE / "README.md"
TABLES = {
    "models": "the models, from the cards, webeval.json and conf/models.yaml",
    "thresholds": "the registry thresholds on held-out web lines, from webeval.json and conf/models.yaml",
}


def _cards() -> list[dict]:
    """Every shipped card, in the order of LANG_NAMES (the order of the Makefile's LANGS)."""
    order = list(LANG_NAMES)
    cards = [json.loads(p.read_text(encoding="utf-8")) for p in HERE.glob("*/card.json")]
    return sorted(cards, key=lambda c: order.index(c["language"]) if c["language"] in order else len(order))


def models_table() -> str:
    rows = ["| lang | file | size | order | training tokens | own held-out median | web held-out pages "
            "| web main median | web boilerplate median | AUC | threshold |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    entries = registry_entries()
    for c in _cards():
        lang, w = c["language"], webeval_for(c)
        h = w["heldout"] if w else None
        measured = h is not None and h["main_lines"]["lines"]
        entry = entries.get(lang)
        threshold = f"{entry['threshold']:,} ({provenance(entry)})" if entry else "not in the registry"
        rows.append(f"| {lang} | `{Path(c['path']).relative_to('lm_models')}` | {c['bytes'] / 1e6:.1f} MB "
                    f"| {c['order']} | {c['training']['tokens'] / 1e6:.2f} M | {c['heldout']['median']:,} "
                    f"| {w['pages']['heldout'] if w else '-'} "
                    f"| {h['main_lines']['p50'] if measured else '-'} | {h['boilerplate_lines']['p50'] if measured else '-'} "
                    f"| {h['auc_boilerplate_above_main'] if measured else '-'} | {threshold} |")
    total = sum(c["bytes"] for c in _cards())
    return "\n".join(rows) + f"\n\n**Total {total / 1e6:.1f} MB ({total / 2**20:.1f} MiB)** on disk, " \
        f"largest file {max(c['bytes'] for c in _cards()) / 1e6:.1f} MB.\n"


def thresholds_table() -> str:
    """Share of held-out web lines above the registry threshold (webeval.py --write measures it there)."""
    rows = ["| lang | threshold | main lines above | boilerplate lines above |", "|---|---|---|---|"]
    entries = registry_entries()
    for c in _cards():
        lang, w, entry = c["language"], webeval_for(c), entries.get(c["language"])
        above = (w or {}).get("heldout", {}).get("above_threshold")
        if not entry or not above:
            continue  # no registry entry, or no held-out page in this language
        if above["threshold"] != entry["threshold"]:
            cells = f"measured at {above['threshold']:,}: run `python lm_models/webeval.py {lang} --write` | |"
        else:
            cells = f"{above['main_lines']:.1%} | {above['boilerplate_lines']:.1%}"
        rows.append(f"| {lang} | {entry['threshold']:,} ({provenance(entry)}) | {cells} |")
    return "\n".join(rows) + "\n"


def render_readme(text: str) -> str:
    """lm_models/README.md with its generated tables (between their markers) rendered afresh."""
    for name, table in (("models", models_table), ("thresholds", thresholds_table)):
        start = f"<!-- {name} table: {TABLES[name]}; written by `python lm_models/train.py card` -->"
        end = f"<!-- end of {name} table -->"
        before, found, rest = text.partition(start)
        if not found or end not in rest:
            raise SystemExit(f"card: {README} has no {start!r} ... {end!r} block")
        text = before + start + "\n" + table() + end + rest.partition(end)[2]
    return text


def rerender(langs: list[str]) -> None:
    """Re-write each model card's README.md from card.json (e.g. after webeval.py --write or a registry
    change), and lm_models/README.md's generated tables."""
    for lang in langs:
        card_path = HERE / lang / "card.json"
        c = json.loads(card_path.read_text(encoding="utf-8"))
        (card_path.parent / "README.md").write_text(render_card(c), encoding="utf-8")
    README.write_text(render_readme(README.read_text(encoding="utf-8")), encoding="utf-8")


def sanity(langs: list[str]) -> None:
    import kenlm

    for lang in langs:
        card = json.loads((HERE / lang / "card.json").read_text(encoding="utf-8"))
        model = kenlm.Model(str(REPO / card["path"]))
        tests = ([SANITY_CLEAN[lang]] if lang in SANITY_CLEAN else []) + boilerplate_for(lang)
        for s in tests:
            print(f"{lang}\t{perplexity(model, s):12.1f}\t{s}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("model")
    m.add_argument("lang")
    m.add_argument("--prune", type=int, nargs="+")
    m.add_argument("--keep-arpa", action="store_true")
    m.add_argument("--order", type=int, help="n-gram order (default: ORDERS, else 3)")
    r = sub.add_parser("registry")
    r.add_argument("langs", nargs="+")
    s = sub.add_parser("sanity")
    s.add_argument("langs", nargs="+")
    cd = sub.add_parser("card")
    cd.add_argument("langs", nargs="+")
    args = ap.parse_args()
    if args.cmd == "model":
        train(args.lang, args.prune, args.keep_arpa, args.order)
    elif args.cmd == "registry":
        registry(args.langs)
    elif args.cmd == "card":
        rerender(args.langs)
    else:
        sanity(args.langs)


if __name__ == "__main__":
    main()
