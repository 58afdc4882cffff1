"""The compiled code of warcplex, and the one way the rest of the package reaches it.

Each part is an extension module built from its ``.pyx`` here (``setup.py``; shared inline helpers in
``common.pxd``) and is the twin of Python code that stays where its rules are written, as the reference:

=======  ==========================================================  ===========================================
part     computes                                                    its Python reference
=======  ==========================================================  ===========================================
html     the block parser target, fed by libxml2's own SAX events;   ``steps.blocks.parse``, ``steps.blocks
         the block features and context features; the depth         .features``, ``steps.extractors
         guard's tag scan                                            .nesting_depth``
trees    the tree ensembles; the linear model's hashed weights       ``steps.blocks.trees``, ``steps.blocks.model``
text     LM tokens and perplexity pooling; the corpus                ``steps.perplexity``, ``corpus.normalize``,
         normalisation and quality signals; the format-character     ``corpus.signals``, ``document``
         scan
=======  ==========================================================  ===========================================

The twin computes what its reference computes, bit for bit (``tests/test_native.py`` runs both on real pages
and edge cases). Nothing here imports the rest of warcplex: the module that owns a rule hands its tables in
(parse.py its tag sets, normalize.py its character kinds, ...), so each rule is written once.

:func:`compiled` gives a part's module, or None where it is not built, or was built from another
:data:`VERSION` than this one (its source changed since): its owner then runs the reference, with the same
output, more slowly; this process says so once (a warning naming the part and the cause) and
:func:`unavailable` tells the split runner, which counts it (``native.<cause>.<part>`` in stats.json, a line of
summary.txt). ``pip install -e .`` (``make setup``) builds the parts in place; ``make dist`` ships them with
``--files`` under :func:`shipped_name`, since a zip (``--py-files``) cannot hold a module that loads.
"""

from __future__ import annotations

import functools
import importlib
import importlib.machinery
import importlib.util
import logging
import sysconfig
from pathlib import Path
from types import ModuleType

from pipeline.spark_files import shipped_copy

# Raised whenever what a part computes, or how its owner calls it, changes: a module built from older source is then
# refused. setup.py compiles it into every part (version.pxi); the tests check that the built parts carry it.
VERSION = 20
PARTS = ("html", "text", "trees")

log = logging.getLogger("warcplex")
_UNAVAILABLE: dict[str, str] = {}  # part -> "missing" | "stale", for the parts asked for in this process


def shipped_name(part: str) -> str:
    """The file name a part is shipped under (``make dist``, ``--files``): its module name, so no other file clashes."""
    return f"{__name__}.{part}{sysconfig.get_config_var('EXT_SUFFIX') or '.so'}"


def built_file(part: str) -> Path | None:
    """The part's extension module as built in this package's directory, or None."""
    found = sorted(Path(__file__).parent.glob(f"{part}.*{Path(shipped_name(part)).suffix}"))
    return found[0] if found else None


@functools.cache
def compiled(part: str) -> ModuleType | None:
    """The compiled module of ``part`` (one of :data:`PARTS`) of this :data:`VERSION`, loaded once per process, or
    None (its owner then runs the Python reference: said once here, counted by the split runner)."""
    try:
        module = importlib.import_module(f"{__name__}.{part}")
    except ImportError as exc:
        module, cause = _load_shipped(part), f"not built ({exc})"
    if module is None:
        return _unavailable(part, "missing", cause)
    if getattr(module, "VERSION", None) != VERSION:
        return _unavailable(part, "stale", f"built from version {getattr(module, 'VERSION', None)}, not {VERSION}")
    return module


def unavailable() -> dict[str, str]:
    """The parts asked for in this process that did not load: part -> ``missing`` or ``stale``."""
    return dict(_UNAVAILABLE)


def _unavailable(part: str, kind: str, cause: str) -> None:
    _UNAVAILABLE[part] = kind
    log.warning("warcplex: the compiled %s part is %s, %s: its Python reference runs instead (the same output, "
                "slower); rebuild it with `pip install -e .` (make setup)", part, kind, cause)
    return None


def _load_shipped(part: str) -> ModuleType | None:
    """The copy of ``part`` that Spark shipped to this executor (``make dist``), or None."""
    path = shipped_copy(shipped_name(part))
    if path is None:
        return None
    name = f"{__name__}.{part}"
    try:
        loader = importlib.machinery.ExtensionFileLoader(name, path)
        module = importlib.util.module_from_spec(importlib.util.spec_from_file_location(name, path, loader=loader))
        loader.exec_module(module)
    except ImportError:
        return None
    return module
