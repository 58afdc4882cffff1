"""The documents: docs/configuration.md is current."""

from __future__ import annotations

import importlib.util

from pydantic import BaseModel

from conftest import ROOT

DOCS = ROOT / "docs"


def load_script(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
