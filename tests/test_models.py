"""The shipped KenLM models: cards match binaries, training and scoring normalise alike, and they separate prose from boilerplate."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys

import pytest

from warcplex.config import PROJECT_ROOT
from warcplex.models import kenlm_model
from warcplex.registry import load_registry
from warcplex.steps.normalize import NORMALIZATION_VERSION, normalize_for_lm
from warcplex.steps.perplexity import perplexity
from warcplex.steps.sentences import SentenceSplitter

REGISTRY = "conf/models.yaml"

CLEAN = {
    "en": "The committee published its annual report on the state of the economy last week.",
    "de": "Die Stadt hat im vergangenen Jahr eine neue Brücke über den Fluss gebaut.",
    "fr": "La ville a construit l'année dernière un nouveau pont sur la rivière.",
    "es": "La ciudad construyó el año pasado un nuevo puente sobre el río.",
}
BOILERPLATE = [
    "Home | About Us | Contact | Privacy Policy",
    "Copyright © 2024 All rights reserved",
    "Share on Facebook Twitter",
    "Login Register Cart (0) Wishlist",
]


@pytest.fixture(scope="module")
def registry() -> dict:
    if not (PROJECT_ROOT / REGISTRY).exists():
        pytest.skip("conf/models.yaml is missing")
    return load_registry(REGISTRY)


def test_every_model_has_a_card_matching_its_binary(registry):
    for lang, entry in registry.items():
        binary = PROJECT_ROOT / entry.path
        card = json.loads((binary.parent / "card.json").read_text())
        assert card["sha256"] == hashlib.sha256(binary.read_bytes()).hexdigest(), lang
        assert card["bytes"] == binary.stat().st_size
        assert card["normalization_version"] == NORMALIZATION_VERSION
        assert (binary.parent / "README.md").read_text().strip()
    total = sum((PROJECT_ROOT / e.path).stat().st_size for e in registry.values())
    assert total <= 40 * 1024 * 1024


def test_training_lines_are_the_scorer_normalisation():
    """lm_models/corpora.py turns prose into training lines exactly as the scorer normalises sentences."""
    spec = importlib.util.spec_from_file_location("lm_corpora", PROJECT_ROOT / "lm_models" / "corpora.py")
    corpora = importlib.util.module_from_spec(spec)
    sys.modules["lm_corpora"] = corpora  # its dataclasses look their module up
    spec.loader.exec_module(corpora)
    paragraph = ("On 4 July 1976 the town's “Old Bridge” — rebuilt twice — reopened. "
                 "Café owners, e.g. Ms. Dupont, served 1,250 visitors!")
    training_lines = corpora._segment_chunk(("en", [paragraph]))
    scored = [normalize_for_lm(s) for para in SentenceSplitter().split(paragraph, "en") for s in para]
    assert training_lines and training_lines == [line for line in scored if line in training_lines]
    assert all("0" in line or not any(c.isdigit() for c in line) for line in training_lines)


@pytest.mark.parametrize("lang", sorted(CLEAN))
def test_clean_prose_scores_far_below_boilerplate(registry, lang):
    if lang not in registry:
        pytest.skip(f"no {lang} model in the registry")
    model = kenlm_model(registry[lang].path)
    clean, _ = perplexity(model, CLEAN[lang])
    # The English model is trained on edited prose; the others on software documentation
    # (see their model cards), which separates less sharply.
    margin = 5 if lang == "en" else 1.5
    for line in BOILERPLATE:
        boiler, _ = perplexity(model, line)
        assert boiler > margin * clean, (lang, line, boiler, clean)
