"""The compiled code of warcplex: one extension module per ``.pyx`` here, built by ``pip install`` (``make setup``;
setup.py), where a build failure fails the install. Each is the one implementation of what it computes:

=======  ==================================================================================================
module   computes
=======  ==================================================================================================
html     the block stage: the parse (libxml2's SAX events -> blocks, markup, structure candidates), the
         block features by the column table of :mod:`~pipeline._native.columns` and the second stage's
         context features, the depth guard's tag scan (html.pyx lists its files, one a concept)
trees    the tree ensembles; the linear model's hashed weights
text     LM tokens and perplexity pooling; the corpus normalisation and quality signals; the
         format-character scan
=======  ==================================================================================================

:func:`compiled` gives a module built from this :data:`VERSION`; one that is missing or was built from older source
is an error (:class:`NotBuilt`), never a slower path. ``make dist`` ships the modules with ``--files`` under
:func:`shipped_name`, since a zip (``--py-files``) cannot hold a module that loads; an executor loads Spark's copy.
"""

from __future__ import annotations

import functools
import importlib
import importlib.machinery
import importlib.util
import sys
import sysconfig
from pathlib import Path
from types import ModuleType

from pipeline.spark_files import shipped_copy

# Raised whenever what a module computes, or how its callers call it, changes: a module built from older source is then
# refused. setup.py compiles it into every module (version.pxi); the tests check that the built modules carry it.
VERSION = 36
PARTS = ("html", "text", "trees")


class NotBuilt(ImportError):
    """A compiled module is missing, or was built from other source than this checkout's."""


def shipped_name(part: str) -> str:
    """The file name a part is shipped under (``make dist``, ``--files``): its module name, so no other file clashes."""
    return f"{__name__}.{part}{sysconfig.get_config_var('EXT_SUFFIX') or '.so'}"


def built_file(part: str) -> Path | None:
    """The part's extension module as built in this package's directory, or None."""
    found = sorted(Path(__file__).parent.glob(f"{part}.*{Path(shipped_name(part)).suffix}"))
    return found[0] if found else None


@functools.cache
def compiled(part: str) -> ModuleType:
    """The compiled module of ``part`` (one of :data:`PARTS`) of this :data:`VERSION`, loaded once per process;
    raises :class:`NotBuilt` where it is missing or stale."""
    try:
        module = importlib.import_module(f"{__name__}.{part}")
    except ImportError as exc:
        module = _load_shipped(part)
        if module is None:
            raise NotBuilt(f"warcplex: the compiled module {part} is not built ({exc}); build it with "
                           "`pip install -e .` (make setup)") from exc
    if getattr(module, "VERSION", None) != VERSION:
        raise NotBuilt(f"warcplex: the compiled module {part} was built from version "
                       f"{getattr(module, 'VERSION', None)}, not {VERSION}; rebuild it with `pip install -e .` "
                       "(make setup)")
    return module


def _shipped_path(part: str) -> str | None:
    """Where a copy of ``part`` shipped with ``make dist`` is: Spark's copy on an executor; on a spark-submit driver,
    which imports the code from the zip before Spark starts, the working directory (YARN's cluster mode puts
    ``--files`` there) or ``make dist``'s ``files/`` next to the zip (client mode); else None."""
    name = shipped_name(part)
    path = shipped_copy(name)
    if path is not None:
        return path
    candidates = [Path.cwd() / name]
    package = Path(__file__).parent
    if not package.is_dir():  # imported from a zip: dist/warcplex.zip/pipeline/_native
        zip_file = next((p for p in package.parents if p.suffix == ".zip"), None)
        if zip_file is not None:
            candidates.append(zip_file.parent / "files" / name)
    return next((str(c) for c in candidates if c.is_file()), None)


def _load_shipped(part: str) -> ModuleType | None:
    """The copy of ``part`` shipped with ``make dist`` (:func:`_shipped_path`), or None."""
    path = _shipped_path(part)
    if path is None:
        return None
    name = f"{__name__}.{part}"
    try:
        loader = importlib.machinery.ExtensionFileLoader(name, path)
        module = importlib.util.module_from_spec(importlib.util.spec_from_file_location(name, path, loader=loader))
        loader.exec_module(module)
    except ImportError:
        return None
    sys.modules[name] = module  # ``from pipeline._native import html`` finds it from now on
    return module
