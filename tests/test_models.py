"""The shipped KenLM models: cards match binaries, training and scoring normalise alike, and they separate prose from boilerplate."""

from __future__ import annotations

import hashlib
import json

import pytest
import yaml

from pipeline.config import PROJECT_ROOT
from pipeline.model_cache import kenlm_model
from pipeline.model_registry import load_registry
from pipeline.lm_text import NORMALIZATION_VERSION, normalize_for_lm
from pipeline.perplexity_rule import perplexity
from pipeline.steps.sentences import split as split_sentences

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
    sizes = [(PROJECT_ROOT / e.path).stat().st_size for e in registry.values()]
    assert max(sizes) <= 20 * 1024 * 1024  # no committed file over 20 MB
    assert sum(sizes) <= 200 * 1024 * 1024


def _registry_yaml() -> dict:
    return yaml.safe_load((PROJECT_ROOT / REGISTRY).read_text(encoding="utf-8"))["models"]


def test_registry_sha256_matches_every_file(registry):
    for lang, entry in _registry_yaml().items():
        digest = hashlib.sha256((PROJECT_ROOT / entry["path"]).read_bytes()).hexdigest()
        assert digest == entry["sha256"], lang


def test_registry_covers_fifteen_languages(registry):
    assert len(registry) >= 15
    for lang, entry in _registry_yaml().items():
        assert entry["threshold"] > 0, lang
        # every threshold says where it comes from: a calibration or a provisional rule
        assert "calibration" in entry or entry["provisional"]["method"], lang


def test_training_lines_are_the_scorer_normalisation():
    """lm_models/corpora.py turns prose into training lines exactly as the scorer normalises sentences."""
    import corpora  # lm_models/ (pytest's pythonpath)
    paragraph = ("On 4 July 1976 the town's “Old Bridge” — rebuilt twice — reopened. "
                 "Café owners, e.g. Ms. Dupont, served 1,250 visitors!")
    training_lines = corpora._segment_chunk(("en", [paragraph]))
    scored = [normalize_for_lm(s) for para in split_sentences(paragraph, "en") for s in para]
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


SANITY = json.loads((PROJECT_ROOT / "lm_models" / "sanity.json").read_text(encoding="utf-8"))
# sanity.json's boilerplate lines per language: 0 navigation menu, 1 copyright line,
# 2 "click here to subscribe ..." instruction, 3 share buttons.
NAV, UI_INSTRUCTION = 0, 2
# Models trained on translated software help cannot tell their own UI instruction from
# prose: help pages are made of "click here to ..." sentences (see "Quality and limits"
# in the cards). Nor, for these languages, their own menu line (measured; strict xfail
# below, so a model that learns it makes the test say so).
NAV_BELOW_CLEAN = {"ja", "pl", "tr", "vi"}


def _registry_languages() -> list[str]:
    path = PROJECT_ROOT / REGISTRY
    return sorted(load_registry(REGISTRY)) if path.exists() else []


def _clean_and(model, lang: str, lines: list[str]) -> tuple[float, list[tuple[str, float]]]:
    clean, words = perplexity(model, SANITY["clean"][lang])
    assert words >= 8 and clean > 1
    return clean, [(line, perplexity(model, line)[0]) for line in lines]


@pytest.mark.parametrize("lang", _registry_languages())
def test_every_registry_model_scores_its_clean_sentence_below_boilerplate(registry, lang):
    """Real KenLM, real binary: a clean sentence of the language beats English boilerplate
    and its own copyright and share lines (and, for English, all four)."""
    model = kenlm_model(registry[lang].path)
    own = SANITY["boilerplate"][lang]
    lines = list(SANITY["boilerplate"]["en"])
    if lang != "en":
        lines += [b for i, b in enumerate(own) if i not in (NAV, UI_INSTRUCTION)]
    clean, scored = _clean_and(model, lang, lines)
    for line, boiler in scored:
        assert boiler > clean, (lang, line, boiler, clean)


@pytest.mark.parametrize("lang", [
    pytest.param(lang, marks=pytest.mark.xfail(strict=True, reason="menu words are UI labels "
                                               "of the translated help it is trained on"))
    if lang in NAV_BELOW_CLEAN else lang
    for lang in _registry_languages() if lang != "en"])
def test_registry_model_scores_its_own_menu_line_above_clean_prose(registry, lang):
    model = kenlm_model(registry[lang].path)
    clean, [(line, boiler)] = _clean_and(model, lang, [SANITY["boilerplate"][lang][NAV]])
    assert boiler > clean, (lang, line, boiler, clean)


def test_make_models_rebuilds_every_registry_model(registry):
    """`make models` (lm_models/Makefile LANGS) covers exactly the languages the registry ships."""
    makefile = (PROJECT_ROOT / "lm_models" / "Makefile").read_text(encoding="utf-8")
    [langs] = [line.split("?=", 1)[1].split() for line in makefile.splitlines()
               if line.startswith("LANGS") and "?=" in line]
    assert sorted(langs) == sorted(registry)
