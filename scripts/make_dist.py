"""Build what a cluster needs: ``dist/warcplex.zip`` for ``--py-files`` and the model files for ``--files``.

    python scripts/make_dist.py [--config conf/cluster.yaml] [--set key=value ...] [--dist dist]

Writes ``dist/warcplex.zip`` (the ``pipeline`` package), copies every model file the job
opens (the KenLM registry, its binaries, fastText lid.176.ftz; see ``pipeline.spark.session.model_files``)
and the compiled parts (``pipeline._native``, under their module names) into ``dist/files/`` and writes
their comma-separated paths to ``dist/files.txt``, ready for
``spark-submit --files "$(cat dist/files.txt)"``. Executors find each model by file name
among the files Spark shipped (``pipeline.model_cache.locate``), so file names must be unique.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import zipfile
from pathlib import Path

import pipeline
from pipeline import _native
from pipeline.config import PROJECT_ROOT, ConfigError, load_settings
from pipeline.spark.session import model_files
from pipeline.user_errors import UsageError


def build_zip(destination: Path) -> int:
    """Zip the ``pipeline`` package, the ``warcplex`` distribution's code (sources only, fixed timestamps: reproducible;
    the presets and models an installed wheel carries in pipeline/shipped/ travel with --files instead)."""
    package = Path(pipeline.__file__).resolve().parent  # the checkout's, or the installed one
    sources = sorted(p for pattern in ("*.py", "*.json", "*.yaml") for p in package.rglob(pattern)
                     if "shipped" not in p.relative_to(package).parts)
    with zipfile.ZipFile(destination, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for source in sources:
            info = zipfile.ZipInfo(str(source.relative_to(package.parent)), date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, source.read_bytes())
    return len(sources)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", help="preset whose models to ship (default: built-in settings)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--dist", default=str(PROJECT_ROOT / "dist"))
    args = parser.parse_args(argv)
    try:
        files = model_files(load_settings(args.config, args.set))
    except (ConfigError, UsageError, FileNotFoundError) as exc:
        print(f"make_dist: error: {exc}", file=sys.stderr)
        return 2
    shipped_as = {source: Path(source).name for source in files}
    for part in _native.PARTS:  # a zip cannot load them: executors load Spark's copies (pipeline._native)
        built = _native.built_file(part)
        if built is None:
            print(f"make_dist: the compiled {part} part is not built; executors run its Python reference",
                  file=sys.stderr)
        else:
            shipped_as[str(built)] = _native.shipped_name(part)
    names = list(shipped_as.values())
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        print(f"make_dist: error: model file names must be unique for --files: {', '.join(duplicates)}",
              file=sys.stderr)
        return 2
    dist = Path(args.dist).resolve()
    shipped = dist / "files"
    if shipped.exists():
        shutil.rmtree(shipped)
    shipped.mkdir(parents=True)
    count = build_zip(dist / "warcplex.zip")
    copies = []
    for source, name in shipped_as.items():
        copy = shipped / name
        shutil.copy2(source, copy)
        copies.append(str(copy))
    (dist / "files.txt").write_text(",".join(copies) + "\n", encoding="utf-8")
    print(f"{dist / 'warcplex.zip'}: {count} modules")
    for copy in copies:
        print(f"{copy}: {Path(copy).stat().st_size} bytes")
    print(f"{dist / 'files.txt'}: --files list")
    return 0


if __name__ == "__main__":
    sys.exit(main())
