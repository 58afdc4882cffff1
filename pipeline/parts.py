"""Parts found by name: steps, extractors, readers and corpus stages.

A part is a class that says its own name (``name = "min_words"``) where it is defined, and derives from the base
class of its kind. The base class says where the parts of its kind live and which setting names them:

=============  ==========================================  ===================  ===============================
kind (part)    base class                                  home                 named by
=============  ==========================================  ===================  ===============================
step           :class:`pipeline.steps.base.Step`           ``pipeline.steps``   ``pipeline.steps``
extractor      :class:`pipeline.steps.extractors.Extractor` ``pipeline.steps``  ``extract.cascade``, a reader
reader         :class:`pipeline.reading.reader.Reader`     ``pipeline.reading`` the input file's name
corpus stage   :class:`pipeline.corpus.stages.CorpusStage` ``pipeline.corpus``  ``corpus.stages``
=============  ==========================================  ===================  ===============================

:func:`find` gives the class a name stands for: the part of that name in the module of that name in its home
(``pipeline/steps/min_words.py`` holds the step ``min_words``), else in any module of its home (a module may
define several parts: ``extractors.py``); ``package.module:Class`` names a part defined anywhere else. So a new
part is one new file in its home and its name in the setting that names its kind. :func:`every` gives every part
of a kind (the readers, which the input's file names choose among).
"""

from __future__ import annotations

import importlib
import pkgutil
import threading
from typing import TypeVar

from pipeline.config import ConfigError

Part = TypeVar("Part", bound=type)

_LOCK = threading.Lock()
_SCANNED: set[str] = set()  # home packages whose every module has been imported


def find(base: Part, name: str) -> Part:
    """The part of ``base``'s kind called ``name`` (or ``package.module:Class``); ConfigError when there is none."""
    module_name, _, class_name = name.partition(":")
    if class_name:
        try:
            found = getattr(importlib.import_module(module_name), class_name, None)
        except ImportError as exc:
            raise ConfigError(f"{base.setting}: no {base.part} {name!r} ({exc})") from None
        if isinstance(found, type) and issubclass(found, base) and found.part == base.part:
            return found
        raise ConfigError(f"{base.setting}: {module_name} has no {base.part} {class_name!r}")
    found = _named(base).get(name)
    if found is None and name.isidentifier():
        _import(f"{base.home}.{name}", optional=True)  # the module named like the part
        found = _named(base).get(name)
    if found is None:
        _scan(base.home)
        found = _named(base).get(name)
    if found is None:
        known = ", ".join(sorted(_named(base))) or "none"
        raise ConfigError(f"{base.setting}: no {base.part} {name!r} (there are: {known})")
    return found


def every(base: Part) -> list[Part]:
    """Every part of ``base``'s kind in its home, by name."""
    _scan(base.home)
    named = _named(base)
    return [named[name] for name in sorted(named)]


def _named(base: type) -> dict[str, type]:
    """The parts of ``base``'s kind defined so far in its home (modules imported): name -> class."""
    named: dict[str, type] = {}
    pending = list(base.__subclasses__())
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if cls.part != base.part or "name" not in vars(cls) or not cls.__module__.startswith(f"{base.home}."):
            continue
        other = named.setdefault(cls.name, cls)
        if other is not cls:
            raise ConfigError(f"two {base.part}s are called {cls.name!r}: {other.__module__}.{other.__qualname__} and "
                              f"{cls.__module__}.{cls.__qualname__}")
    return named


def _import(module_name: str, optional: bool = False) -> None:
    try:
        importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if not (optional and exc.name == module_name):
            raise


def _scan(home: str) -> None:
    """Import every module of the package ``home`` (and of its packages), once per process."""
    if home in _SCANNED:
        return
    with _LOCK:
        if home in _SCANNED:
            return
        package = importlib.import_module(home)
        for module in pkgutil.walk_packages(package.__path__, f"{home}."):
            _import(module.name)
        _SCANNED.add(home)
