"""The compiled block stage (``_native.pyx``), or None where it cannot be loaded.

``pip install`` builds it next to this file. Imported from ``make dist``'s zip (``--py-files``) the
package has no compiled module (a zip cannot hold one that loads), so the copy ``make dist`` ships
with ``--files`` is loaded from Spark's files directory instead. Without either, the block stage
runs its pure-Python reference code and counts ``blocks.pure_python`` per page
(:class:`~pipeline.steps.blocks.step.BlocksExtractor`).
"""

from __future__ import annotations

import functools
import importlib.machinery
import importlib.util
import sysconfig
from types import ModuleType

VERSION = 17  # the _native.pyx VERSION this Python code computes the same features as
MODULE = "pipeline.steps.blocks._native"
FILE_NAME = "_native" + (sysconfig.get_config_var("EXT_SUFFIX") or ".so")  # as `make dist` ships it


@functools.cache
def compiled() -> ModuleType | None:
    """The compiled module of this version, loaded once per process, or None."""
    try:
        from pipeline.steps.blocks import _native as module
    except ImportError:
        module = _load_shipped()
    return module if module is not None and getattr(module, "VERSION", None) == VERSION else None


def _load_shipped() -> ModuleType | None:
    from pipeline.models import _shipped_copy

    path = _shipped_copy(FILE_NAME)
    if path is None:
        return None
    try:
        loader = importlib.machinery.ExtensionFileLoader(MODULE, path)
        spec = importlib.util.spec_from_file_location(MODULE, path, loader=loader)
        module = importlib.util.module_from_spec(spec)
        loader.exec_module(module)
    except ImportError:
        return None
    return module

