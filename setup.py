"""The compiled package ``pipeline/_native/`` (one extension module per ``*.pyx``), built by ``pip install``.

Everything else is declared in pyproject.toml. This file stays for what a declaration cannot say: the
modules compile against the libxml2 headers that lxml ships (``lxml.get_include()``, known only once lxml is
installed in the build environment), and they carry the package's one ``VERSION``, read here from
``pipeline/_native/__init__.py`` into ``version.pxi`` (rewritten only when it changes, so that a new version
rebuilds them). Each module is optional: where one cannot be compiled the install goes on without it, and its
Python reference runs instead, counted and said (``pipeline._native``).
"""

import re
from pathlib import Path

import lxml
from Cython.Build import cythonize
from setuptools import Extension, setup

NATIVE = Path("pipeline") / "_native"


def version_include() -> None:
    """``version.pxi`` from the facade's VERSION (the one place it is written)."""
    version = re.search(r"^VERSION = (\d+)$", (NATIVE / "__init__.py").read_text(encoding="utf-8"), re.M).group(1)
    include = NATIVE / "version.pxi"
    text = f"# Written by setup.py from VERSION in __init__.py: do not edit.\nVERSION = {version}\n"
    if not include.exists() or include.read_text(encoding="utf-8") != text:
        include.write_text(text, encoding="utf-8")


version_include()
setup(ext_modules=cythonize([Extension(f"pipeline._native.{source.stem}", [str(source)],
                                       include_dirs=lxml.get_include(), extra_compile_args=["-O2"], optional=True)
                             for source in sorted(NATIVE.glob("*.pyx"))],
                            compiler_directives={"language_level": "3"}))
