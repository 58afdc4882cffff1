"""The documents: README.md stays a user's page, docs/configuration.md and the model cards are current,
links, anchors and code paths resolve."""

from __future__ import annotations

import importlib.util
import json
import re
import unicodedata

import pytest
import yaml
from pydantic import BaseModel

from conftest import ROOT

README = ROOT / "README.md"
DOCS = ROOT / "docs"
LM_MODELS = ROOT / "lm_models"
README_LIMIT = 30_000
# The top-level folders whose paths a document may name.
TREES = ("pipeline", "scripts", "tests", "conf", "lm_models", "jobs", "docs", ".ci")
# Made by a build, not in the tree: the wheel's copy of conf/ and lm_models/ (setup.py).
BUILT = ("pipeline/shipped/",)


def load_module(path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_script(name: str):
    return load_module(ROOT / "scripts" / f"{name}.py")


def documents():
    return [README, *sorted(DOCS.rglob("*.md")), LM_MODELS / "README.md"]


def test_readme_is_for_users_and_under_the_limit():
    text = README.read_text(encoding="utf-8")
    assert len(README.read_bytes()) < README_LIMIT
    assert "make run" in text and "make test" in text
    assert not re.search(r"\bcommit [0-9a-f]{7,}\b", text), "no history in the README: commit hashes go in commit messages"


# Lab shorthand a user cannot look up: the source papers by their file number, their equations and tables, a
# thesis's acronym. User documents name a paper as the README's references do; research logs may use them.
LAB_SHORTHAND = re.compile(r"\bseeds? 00\d|\b[Ee]q\. ?\d|\bTables? \d|\bMCE\b")


@pytest.mark.parametrize("document", [p for p in documents() if "research" not in p.parts],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_user_documents_speak_plain_words(document):
    found = [line.strip()[:120] for line in document.read_text(encoding="utf-8").splitlines()
             if LAB_SHORTHAND.search(line)]
    assert found == [], "name the paper (README.md#references) or say it in plain words"


def test_configuration_reference_is_current():
    reference = load_script("config_reference")
    text = reference.render()  # raises UndocumentedError naming every key without a description
    assert (DOCS / "configuration.md").read_text(encoding="utf-8") == text, \
        "docs/configuration.md is stale: run `python scripts/config_reference.py` (or `make docs`)"


class _Documented(BaseModel):
    """A section whose keys are described as pipeline/config.py describes its own."""

    # A comment above the field is its meaning.
    above: int = 1
    beside: bool = True  # so is a comment at the end of its line
    plain: str = "x"


def test_a_key_without_a_description_fails_the_reference():
    reference = load_script("config_reference")
    assert reference.field_meaning(_Documented, "above") == "A comment above the field is its meaning."
    assert reference.field_meaning(_Documented, "beside") == "so is a comment at the end of its line"
    found = reference.Reference()
    found.section("example", _Documented)
    assert found.missing == [f"example.plain ({__name__}._Documented)"]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower().replace("`", "")
    kept = "".join(ch for ch in text if ch in " -_" or unicodedata.category(ch)[0] in "LN")
    return kept.replace(" ", "-")


def anchors(path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return {slug(m.group(1)) for m in re.finditer(r"^#+\s+(.*)$", text, flags=re.M)}


def links(path):
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return re.findall(r"\]\(([^)\s]+)\)", text)


@pytest.mark.parametrize("document", documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_and_anchors_resolve(document):
    broken = []
    for target in links(document):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path, _, anchor = target.partition("#")
        resolved = (document.parent / path).resolve() if path else document
        name = str(resolved.relative_to(ROOT)) if resolved.is_relative_to(ROOT) else str(resolved)
        if not resolved.exists():
            broken.append(target)
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(target)
    assert broken == []


PATH = re.compile(r"(?<![\w/.:-])((?:%s)/[\w./-]*[\w/])" % "|".join(re.escape(t) for t in TREES))


def named_paths(path) -> set[str]:
    """Paths under the project's folders that a document names in code spans or code blocks."""
    text = path.read_text(encoding="utf-8")
    code = re.findall(r"```.*?```", text, flags=re.S) + re.findall(r"`([^`]+)`", re.sub(r"```.*?```", "", text,
                                                                                               flags=re.S))
    return {m.group(1) for span in code for m in PATH.finditer(span) if not re.search(r"[<*{]", span[m.end():m.end() + 1])}


@pytest.mark.parametrize("document", documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_named_code_paths_exist(document):
    missing = sorted(p for p in named_paths(document)
                     if not p.startswith(BUILT) and not (ROOT / p).exists())
    assert missing == []


def registry() -> dict:
    return yaml.safe_load((ROOT / "conf" / "models.yaml").read_text(encoding="utf-8"))["models"]


def test_model_cards_agree_with_the_registry():
    """Every registry model has its card, naming the same file and sha256; every card's model is registered,
    and its held-out figures were measured at the registry's threshold."""
    entries = registry()
    cards = {p.parent.name: json.loads(p.read_text(encoding="utf-8")) for p in LM_MODELS.glob("*/card.json")}
    assert sorted(cards) == sorted(entries)
    for lang, entry in entries.items():
        assert (cards[lang]["path"], cards[lang]["sha256"]) == (entry["path"], entry["sha256"]), lang
        webeval = LM_MODELS / lang / "webeval.json"
        above = json.loads(webeval.read_text(encoding="utf-8"))["heldout"].get("above_threshold") \
            if webeval.exists() else None
        assert above is None or above["threshold"] == entry["threshold"], \
            f"{lang}: held-out shares measured at {above['threshold']}, registry says {entry['threshold']}: " \
            f"run `python lm_models/webeval.py {lang} --write`, then `make docs`"


def test_model_cards_and_the_models_readme_are_generated_from_the_registry():
    train = load_module(LM_MODELS / "train.py")
    stale = [lang for lang in registry()
             if train.render_card(json.loads((LM_MODELS / lang / "card.json").read_text(encoding="utf-8")))
             != (LM_MODELS / lang / "README.md").read_text(encoding="utf-8")]
    readme = (LM_MODELS / "README.md").read_text(encoding="utf-8")
    if train.render_readme(readme) != readme:
        stale.append("lm_models/README.md")
    assert stale == [], "model cards stale: run `make docs` (python lm_models/train.py card LANG...)"
