"""The package layout's rules, read from the code's own imports (every import statement, in a function or not):
no module of pipeline/ imports itself through others (no import cycle); each package stands on its floor and imports
only its own modules and those of the floors below (docs/architecture.md draws the same table); the compiled package
is the ground floor of what it computes; nothing edits sys.path."""

from __future__ import annotations

import ast
import re

import pytest

from conftest import ROOT

PACKAGE = ROOT / "pipeline"

# The floors, from the ground up: a package or module of pipeline/ may import its own modules and those of the floors
# below its own, never a floor above nor another of its floor.
FLOORS = [
    ("redact",),  # secret redaction: what every printed or written value goes through
    ("config", "spark_files", "user_errors"),  # settings, Spark's shipped files, the user's errors (their one line)
    ("_native", "model_cache", "parts", "show_config", "stats"),  # compiled code, model files loaded once, parts by name,
    # `warcplex config` (the effective settings), counters
    ("document", "model_registry", "lm_text"),  # the page and document types, the per-language model registry, the LM's
    # text (normalisation and tokens)
    ("reading", "perplexity_rule"),  # input files -> pages (the readers); the perplexity rule
    ("steps",),  # pages -> documents (steps, extractors, the cascade, the block stage)
    ("writing",),  # documents -> rows and the output directory
    ("explain",),  # a page as the pipeline saw it: traces, the HTML view, the run's explained sample
    ("spark",),  # the Spark job: splits, tasks, the run
    ("corpus", "lm"),  # job extensions: the corpus stages; self-training and train-lm
    ("analysis",),  # the run-level analysis: carbon, index statistics, report, sweep, calibration
    ("cli",),  # the composition root: the warcplex command
]
FLOOR = {unit: level for level, units in enumerate(FLOORS) for unit in units}


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


def module_name(path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imported_package_modules(path) -> set[str]:
    """The modules of pipeline/ that ``path`` imports (a name imported from a module is that module)."""
    return {name if name in MODULES else name.rpartition(".")[0] for name in imported_modules(path)
            if name.startswith("pipeline.") and (name in MODULES or name.rpartition(".")[0] in MODULES)}


def unit(module: str) -> str:
    """The package or top-level module of pipeline/ that ``module`` belongs to."""
    return module.split(".")[1]


def test_every_package_stands_on_a_floor():
    assert {unit(module) for module in MODULES if module != "pipeline"} == set(FLOOR)


@pytest.mark.parametrize("module", [m for m in MODULES if m != "pipeline"])
def test_a_module_imports_only_its_own_package_and_the_floors_below(module):
    own = unit(module)
    above = sorted(m for m in imported_package_modules(MODULES[module]) if unit(m) != own and FLOOR[unit(m)] >= FLOOR[own])
    assert above == [], f"{module} (floor {FLOOR[own]}) imports from its floor or above"


def test_no_module_imports_itself_through_others():
    """No import cycle among the modules of pipeline/ (Tarjan's strongly connected components)."""
    graph = {module: imported_package_modules(path) - {module} for module, path in MODULES.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    assert cycles == []


NATIVE = PACKAGE / "_native"
# What the compiled package may use of warcplex: itself, and the lookup of the files Spark shipped.
NATIVE_MAY_IMPORT = ("pipeline._native", "pipeline.spark_files")


def test_the_compiled_package_imports_nothing_above_it():
    """pipeline/_native/'s Python and its Cython import no other part of warcplex (the modules that own a rule hand
    their tables in)."""
    used = set()
    for path in NATIVE.glob("*.py"):
        used |= {m for m in imported_modules(path) if m.startswith("pipeline")}
    for path in [*NATIVE.glob("*.pyx"), *NATIVE.glob("*.pxd"), *NATIVE.glob("*.pxi")]:
        used |= set(re.findall(r"^\s*(?:from|c?import)\s+(pipeline[\w.]*)", path.read_text(encoding="utf-8"), re.M))
    assert used and not {m for m in used if not m.startswith(NATIVE_MAY_IMPORT)}


def test_no_python_file_edits_sys_path():
    offenders = [str(p.relative_to(ROOT)) for folder in ("pipeline", "scripts", "jobs", "tests", "lm_models")
                 for p in (ROOT / folder).rglob("*.py") if "sys.path." + "insert" in p.read_text(encoding="utf-8")
                 or "sys.path." + "append" in p.read_text(encoding="utf-8")]
    assert offenders == []


def test_the_line_of_a_users_mistake_is_written_in_one_place():
    """Every command tells a user's mistake through `user_errors` (secrets masked, exit status 2), none in its own words."""
    writers = sorted(module for module, path in MODULES.items()
                     if "warcplex: error:" in path.read_text(encoding="utf-8") and module != "pipeline.user_errors")
    assert writers == []


def test_no_two_modules_share_a_name():
    """A module's name says what it holds, so two modules of pipeline/ (Python or compiled) never share one."""
    names: dict[str, list[str]] = {}
    for path in [*PACKAGE.rglob("*.py"), *PACKAGE.rglob("*.pyx")]:
        if path.stem != "__init__":
            names.setdefault(path.stem, []).append(str(path.relative_to(ROOT)))
    assert {name: paths for name, paths in names.items() if len(paths) > 1} == {}
