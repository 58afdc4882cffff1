"""The package layout's rules: the compiled package stands on the ground floor, the runtime never imports the analysis,
nothing edits sys.path."""

from __future__ import annotations

import ast
import re

import pytest

from conftest import ROOT

PACKAGE = ROOT / "pipeline"
# The composition root (the `warcplex` command) is the one place that puts analysis after the job.
COMPOSITION = {PACKAGE / "cli.py"}


def imported_modules(path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def runtime_modules():
    return [p for p in sorted(PACKAGE.rglob("*.py"))
            if (PACKAGE / "analysis") not in p.parents and p not in COMPOSITION]


@pytest.mark.parametrize("path", runtime_modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_runtime_module_imports_no_analysis_module(path):
    assert not {m for m in imported_modules(path) if m.startswith("pipeline.analysis")}


def test_no_python_file_edits_sys_path():
    offenders = [str(p.relative_to(ROOT)) for folder in ("pipeline", "scripts", "jobs", "tests", "lm_models")
                 for p in (ROOT / folder).rglob("*.py") if "sys.path." + "insert" in p.read_text(encoding="utf-8")
                 or "sys.path." + "append" in p.read_text(encoding="utf-8")]
    assert offenders == []


NATIVE = PACKAGE / "_native"
# What the compiled package may use of warcplex: itself, and the lookup of the files Spark shipped.
NATIVE_MAY_IMPORT = ("pipeline._native", "pipeline.shipped")


def test_the_compiled_package_imports_nothing_above_it():
    """pipeline/_native/ is the ground floor: its Python and its Cython import no other part of warcplex (the modules
    that own a rule hand their tables in)."""
    used = set()
    for path in NATIVE.glob("*.py"):
        used |= {m for m in imported_modules(path) if m.startswith("pipeline")}
    for path in [*NATIVE.glob("*.pyx"), *NATIVE.glob("*.pxd")]:
        used |= set(re.findall(r"^\s*(?:from|c?import)\s+(pipeline[\w.]*)", path.read_text(encoding="utf-8"), re.M))
    assert used and not {m for m in used if not m.startswith(NATIVE_MAY_IMPORT)}
