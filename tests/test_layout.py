"""The package layout's rules: the runtime never imports the analysis, nothing edits sys.path."""

from __future__ import annotations

import ast

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
