"""A non-editable install runs the sample from any directory: the wheel carries its presets and models.

The project is built into a wheel (from a copy of the source tree, with this virtualenv's build tools and no index),
installed with ``--no-deps`` into a fresh virtualenv that reads its dependencies from this one, and ``warcplex run``
runs there from a temporary directory holding nothing but the input WARC: the rows must be the golden ones.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, SAMPLE_WARC
from golden_digest import GOLDEN_FILE, output_digest

pytestmark = [pytest.mark.slow, pytest.mark.spark]

# What a source tree holds beyond the sources: virtualenvs, builds, caches, model-building work.
NOT_SOURCES = shutil.ignore_patterns(".git", ".venv", "build", "dist", "out", "*.egg-info", "__pycache__",
                                     ".pytest_cache", "*.so", "_native.c", "work", "tools")


def run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=1200, **kwargs)
    assert done.returncode == 0, f"{' '.join(map(str, cmd))}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The python of a fresh virtualenv with the project's wheel installed (not editable)."""
    if shutil.which("java") is None:
        pytest.skip("Java is needed for Spark")
    work = tmp_path_factory.mktemp("install")
    source = work / "source"
    shutil.copytree(ROOT, source, ignore=NOT_SOURCES)
    run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
         "--wheel-dir", str(work / "wheels"), str(source)])
    shutil.rmtree(source)  # nothing of the source tree is left to find
    wheel = next((work / "wheels").glob("warcplex-*.whl"))
    venv = work / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    # The dependencies: this virtualenv's packages, after the new one's own (a path in a .pth file).
    site = Path(run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps", "--no-index",
         str(wheel)])
    return python


def test_the_wheel_carries_the_presets_and_the_registry_models(installed):
    probe = ("import json, pipeline, pipeline.config as c; from pipeline.registry import load_registry; "
             "from pipeline.models import locate; "
             "print(json.dumps({'package': pipeline.__file__, 'root': str(c.PROJECT_ROOT), "
             "'models': sorted(locate(e.path) for e in load_registry('conf/models.yaml').values())}))")
    found = json.loads(run([str(installed), "-c", probe], cwd=installed.parent).stdout)
    venv = installed.parent.parent
    assert Path(found["package"]).is_relative_to(venv) and Path(found["root"]).is_relative_to(venv)
    assert (Path(found["root"]) / "conf" / "local.yaml").is_file()
    entries = yaml.safe_load((ROOT / "conf" / "models.yaml").read_text(encoding="utf-8"))["models"].values()
    registry = sorted(str(Path(found["root"]) / e["path"]) for e in entries)
    assert found["models"] == registry and len(registry) >= 15


def test_the_installed_command_runs_the_sample_from_another_directory(installed, tmp_path):
    here = tmp_path / "elsewhere"
    (here / "tests" / "data").mkdir(parents=True)
    shutil.copy(SAMPLE_WARC, here / "tests" / "data" / SAMPLE_WARC.name)  # the golden rows name this relative path
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    env.update(PYSPARK_PYTHON=str(installed), PYSPARK_DRIVER_PYTHON=str(installed),
               SPARK_LOCAL_IP=env.get("SPARK_LOCAL_IP", "127.0.0.1"))
    run([str(installed.parent / "warcplex"), "run", "--input", f"tests/data/{SAMPLE_WARC.name}", "--output", "out",
         "--config", "local", "--dropped", "dropped", "--sentences", "sentences"], cwd=here, env=env)
    golden = json.loads(GOLDEN_FILE.read_text(encoding="utf-8"))
    digest = output_digest(here / "out", {"dropped": here / "dropped", "sentences": here / "sentences"})
    for part in ("data", "dropped", "sentences"):
        assert digest[part] == golden[part], part
    assert len(digest["data"]) == len(golden["data"]) > 0
    loads = {name for per_process in json.loads((here / "out" / "stats.json").read_text())["model_loads"].values()
             for name in per_process}
    assert "registry:models_yaml" in loads and "kenlm:en_3gram_trie_bin" in loads and "kenlm:de_3gram_trie_bin" in loads
    assert {p.name for p in here.iterdir()} <= {"dropped", "out", "sentences", "tests"}  # nothing else written
