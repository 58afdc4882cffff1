"""`pip install .` and `pip install warcplex-*.whl` into empty virtualenvs pull every runtime dependency.

Nothing is borrowed from the development environment: each virtualenv is made with ``python -m venv`` (pip only),
and pip resolves warcplex's declared dependencies from the package index, as a user's would, with build isolation
for the compiled block stage. A dependency missing from ``[project] dependencies`` fails here: first on importing
every module of the installed package, then in ``warcplex run``, ``warcplex explain`` and ``warcplex config``, run
from a temporary directory that holds nothing but the input WARC. The rows must be the golden ones.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, SAMPLE_WARC
from golden_digest import GOLDEN_FILE, output_digest

pytestmark = [pytest.mark.slow, pytest.mark.spark]

# What a source tree holds beyond the sources: virtualenvs, builds, caches, model-building work.
NOT_SOURCES = shutil.ignore_patterns(".git", ".venv", "build", "dist", "out", "*.egg-info", "__pycache__",
                                     ".pytest_cache", "*.so", "*.c", "version.pxi", "work", "tools")

# The environment of a user's shell: nothing that points into this checkout or its virtualenv.
CLEAN_ENV = {k: v for k, v in os.environ.items()
             if k not in ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV", "PYTHONHOME")}
CLEAN_ENV["PATH"] = os.pathsep.join(p for p in CLEAN_ENV.get("PATH", "").split(os.pathsep)
                                    if not p.startswith(str(ROOT)))
CLEAN_ENV.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

# Every module of the installed package, imported one by one (a module-level import of an undeclared package fails).
IMPORT_ALL = """
import importlib, pkgutil, pipeline
names = sorted(m.name for m in pkgutil.walk_packages(pipeline.__path__, "pipeline."))
for name in names:
    importlib.import_module(name)
print(len(names))
"""


def run(cmd: list, env: dict | None = None, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=1800,
                          env=CLEAN_ENV if env is None else env, **kwargs)
    assert done.returncode == 0, f"{' '.join(map(str, cmd))}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def base_python() -> str:
    """The interpreter this virtualenv was made from: a user's python3, not this virtualenv's."""
    return getattr(sys, "_base_executable", None) or sys.executable


def empty_venv(path: Path) -> Path:
    """A new virtualenv with pip and nothing else; its python."""
    run([base_python(), "-m", "venv", path])
    python = path / "bin" / "python"
    listed = run([python, "-m", "pip", "list", "--format=json"]).stdout
    assert {p["name"] for p in json.loads(listed)} <= {"pip", "setuptools"}, listed
    return python


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    """A copy of the checkout's sources alone (no virtualenv, no built modules)."""
    if shutil.which("java") is None:
        pytest.skip("Java is needed for Spark")
    copy = tmp_path_factory.mktemp("install") / "warcplex"
    shutil.copytree(ROOT, copy, ignore=NOT_SOURCES)
    return copy


@pytest.fixture(scope="module")
def installed(source, tmp_path_factory) -> Path:
    """The python of an empty virtualenv after `pip install <source tree>`."""
    python = empty_venv(tmp_path_factory.mktemp("venv-source") / "venv")
    run([python, "-m", "pip", "install", "--quiet", source])
    return python


@pytest.fixture(scope="module")
def installed_wheel(source, tmp_path_factory) -> Path:
    """The python of an empty virtualenv after `pip install warcplex-*.whl` (the wheel built from the sources)."""
    work = tmp_path_factory.mktemp("venv-wheel")
    builder = empty_venv(work / "builder")
    run([builder, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", work / "wheels", source])
    wheel = next((work / "wheels").glob("warcplex-*.whl"))
    python = empty_venv(work / "venv")
    run([python, "-m", "pip", "install", "--quiet", wheel])
    return python


def spark_env(python: Path) -> dict[str, str]:
    return {**CLEAN_ENV, "PYSPARK_PYTHON": str(python), "PYSPARK_DRIVER_PYTHON": str(python)}


@pytest.mark.parametrize("how", ["installed", "installed_wheel"])
def test_every_module_imports_and_the_wheel_carries_presets_and_models(how, request, tmp_path):
    python = request.getfixturevalue(how)
    modules = int(run([python, "-c", IMPORT_ALL], cwd=tmp_path).stdout)
    assert modules > 60
    probe = ("import json, pipeline, pipeline.config as c; from pipeline.model_registry import load_registry; "
             "from pipeline.model_cache import locate; "
             "print(json.dumps({'package': pipeline.__file__, 'root': str(c.PROJECT_ROOT), "
             "'models': sorted(locate(e.path) for e in load_registry('conf/models.yaml').values())}))")
    found = json.loads(run([python, "-c", probe], cwd=tmp_path).stdout)
    venv = python.parent.parent
    assert Path(found["package"]).is_relative_to(venv) and Path(found["root"]).is_relative_to(venv)
    assert (Path(found["root"]) / "conf" / "local.yaml").is_file()
    entries = yaml.safe_load((ROOT / "conf" / "models.yaml").read_text(encoding="utf-8"))["models"].values()
    registry = sorted(str(Path(found["root"]) / e["path"]) for e in entries)
    assert found["models"] == registry and len(registry) >= 15
    # the pandas the install resolves is one PySpark supports (its own check, its FutureWarning an error)
    run([python, "-W", "error::FutureWarning", "-c",
         "from pyspark.sql.pandas.utils import require_minimum_pandas_version as r; r()"], cwd=tmp_path)
    config = run([venv / "bin" / "warcplex", "config", "--config", "local", "--set", "extract.timeout_s=5"],
                 cwd=tmp_path).stdout
    assert yaml.safe_load(config)["extract"]["timeout_s"] == 5


def test_the_installed_command_runs_and_explains_the_sample_from_another_directory(installed, tmp_path):
    here = tmp_path / "elsewhere"
    (here / "tests" / "data").mkdir(parents=True)
    shutil.copy(SAMPLE_WARC, here / "tests" / "data" / SAMPLE_WARC.name)  # the golden rows name this relative path
    warcplex = installed.parent / "warcplex"
    env = spark_env(installed)
    run([warcplex, "run", "--input", f"tests/data/{SAMPLE_WARC.name}", "--output", "out", "--config", "local",
         "--dropped", "dropped", "--sentences", "sentences"], cwd=here, env=env)
    golden = json.loads(GOLDEN_FILE.read_text(encoding="utf-8"))
    digest = output_digest(here / "out", {"dropped": here / "dropped", "sentences": here / "sentences"})
    for part in ("data", "dropped", "sentences"):
        assert digest[part] == golden[part], part
    assert len(digest["data"]) == len(golden["data"]) > 0
    loads = {name for per_process in json.loads((here / "out" / "stats.json").read_text())["model_loads"].values()
             for name in per_process}
    assert "registry:models_yaml" in loads and "kenlm:en_3gram_trie_bin" in loads and "kenlm:de_3gram_trie_bin" in loads

    run([warcplex, "explain", "--from-output", "out", "--sample", "2", "--output", "explained"], cwd=here, env=env)
    pages = sorted((here / "explained").glob("*.html"))
    assert pages and all("<html" in p.read_text(encoding="utf-8").lower() for p in pages)
    assert {p.name for p in here.iterdir()} <= {"dropped", "explained", "out", "sentences", "tests"}  # nothing else
