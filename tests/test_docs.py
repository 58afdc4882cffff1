"""The documents: docs/configuration.md and the model cards are current."""

from __future__ import annotations

import importlib.util
import json

import yaml
from pydantic import BaseModel

from conftest import ROOT

DOCS = ROOT / "docs"
LM_MODELS = ROOT / "lm_models"


def load_module(path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_script(name: str):
    return load_module(ROOT / "scripts" / f"{name}.py")


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
