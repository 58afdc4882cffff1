"""The driver JVM of the runs ``warcplex`` starts itself: its ``java``, its options and its class-data-sharing
(CDS) archive.

The driver JVM loads and verifies thousands of classes on every run (Spark core, and Spark SQL for
the corpus stages); from a dynamic CDS archive it maps them instead. ``python -m pipeline.spark.cds``
(run by ``make setup``, with the sample WARC) makes the archive with a training run under
``-XX:ArchiveClassesAtExit``; :func:`pipeline.spark.session.spark_context` adds
``-XX:SharedArchiveFile`` when the archive for this Java, this pyspark and these JVM options exists,
and nothing otherwise (the JVM then loads its classes as before). The archive lives in the
virtualenv that holds pyspark (about 190 MB), under a name that carries the Java runtime version,
the pyspark version and a digest of Spark's jars directory and the JVM options, so an upgrade or a
reinstall never maps a stale archive: it just runs without one until the next ``make setup``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from pipeline.config import PROJECT_ROOT
from pipeline.user_errors import UsageError

ARCHIVE_DIR = Path(sys.prefix) / "var" / "warcplex-cds"
TRAINING_CONFIG = PROJECT_ROOT / "conf" / "local.yaml"

# JVM options for the JVMs `warcplex run` starts itself (the driver, which is also the local
# executor, and spark-submit's launcher): they only schedule one task per split and pass file
# names and stats dicts (no rows, no shuffle), so C1-compiled code and the serial collector do
# that with less CPU than the optimising JIT and G1's background threads.
BATCH_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def require_java() -> str:
    """Path of the ``java`` Spark will use, or a clear error."""
    java_home = os.environ.get("JAVA_HOME")
    candidate = os.path.join(java_home, "bin", "java") if java_home else shutil.which("java")
    if not candidate or not os.access(candidate, os.X_OK):
        where = f"JAVA_HOME={java_home} has no bin/java" if java_home else "no `java` on PATH"
        raise UsageError(f"Java not found ({where}); Spark needs Java 17: install openjdk-17-jre-headless "
                         "or set JAVA_HOME")
    return candidate


def java_runtime_version(java: str) -> str | None:
    """``JAVA_RUNTIME_VERSION`` from the ``release`` file of the JDK that ``java`` belongs to, or None."""
    release = Path(os.path.realpath(java)).parent.parent / "release"
    try:
        lines = release.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for line in lines:
        key, _, value = line.partition("=")
        if key == "JAVA_RUNTIME_VERSION":
            return value.strip().strip('"') or None
    return None


class ClassArchive:
    """The archive for one Java, one pyspark install and one set of JVM options."""

    def __init__(self, java: str, java_options: str, directory: Path | None = None) -> None:
        self.java_options, self.directory = java_options, directory or ARCHIVE_DIR
        self.path = self._path(java)

    def _path(self, java: str) -> Path | None:
        import pyspark

        runtime = java_runtime_version(java)
        jars = Path(pyspark.__file__).parent / "jars"
        if runtime is None or not jars.is_dir():
            return None
        digest = hashlib.sha256(f"{jars.stat().st_mtime_ns}\n{self.java_options}".encode()).hexdigest()[:12]
        safe = "".join(c if c.isalnum() or c in ".-_" else "_" for c in runtime)
        return self.directory / f"spark-{pyspark.__version__}-java-{safe}-{digest}.jsa"

    def java_option(self) -> str | None:
        """``-XX:SharedArchiveFile=...`` when the archive exists, else None."""
        if self.path is None or not self.path.is_file():
            return None
        return f"-XX:SharedArchiveFile={self.path}"

    def build(self, training_warc: Path) -> Path:
        """Make the archive with a training run (the sample WARC, the local preset, the corpus stages on):
        the driver JVM dumps the classes it loaded when it exits, into a temporary file renamed into
        place once the run is over; archives of other Java or pyspark versions are removed."""
        if self.path is None:
            raise RuntimeError("no Java runtime version (JAVA_HOME/release) or no pyspark jars: no archive")
        self.directory.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="cds-", dir=self.directory) as tmp:
            dump = Path(tmp) / self.path.name
            options = f"{self.java_options} -XX:ArchiveClassesAtExit={dump}"
            cmd = [sys.executable, "-m", "pipeline.cli", "run", "--input", str(training_warc),
                   "--output", str(Path(tmp) / "out"), "--config", str(TRAINING_CONFIG),
                   "--set", f"spark.conf.spark.driver.extraJavaOptions={options}"]
            run = subprocess.run(cmd, capture_output=True, text=True, cwd=PROJECT_ROOT)
            if run.returncode != 0:
                raise RuntimeError(f"the training run failed ({run.returncode}): {run.stderr.strip()[-500:]}")
            if not dump.is_file():
                raise RuntimeError(f"the training run's JVM wrote no archive ({dump})")
            os.replace(dump, self.path)
        for stale in self.directory.glob("*.jsa"):
            if stale != self.path:
                stale.unlink()
        return self.path


def main(argv: list[str] | None = None) -> int:
    """``python -m pipeline.spark.cds WARC``: build the archive for the ``java`` a run would use, with a training
    run on WARC (``make setup`` gives the sample); a failure is reported, not fatal."""
    try:
        archive = ClassArchive(require_java(), BATCH_JAVA_OPTIONS)
        if archive.java_option() is not None:
            print(f"warcplex: JVM class-data archive present: {archive.path}")
            return 0
        training_warc = Path((sys.argv[1:] if argv is None else argv)[0])
        print(f"warcplex: building the JVM class-data archive (a training run on {training_warc.name}) ...")
        print(f"warcplex: JVM class-data archive: {archive.build(training_warc)}")
    except (UsageError, RuntimeError) as exc:
        print(f"warcplex: no JVM class-data archive ({exc}); runs load their classes without one", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
