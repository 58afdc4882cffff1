"""The Spark side of a run: Java check, the SparkSession, the model files shipped to executors.

Also the one-line argument parser and :class:`UsageError` every command shares.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys

from warcplex.config import Settings, resolve_path
from warcplex.models import default_lid_model_path
from warcplex.registry import load_registry


class UsageError(Exception):
    """A problem the user can fix; printed as one line, without a traceback."""


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (no usage dump)."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"warcplex: error: {message} (see {self.prog} --help)\n")


def require_java() -> str:
    """Path of the ``java`` Spark will use, or a clear error."""
    java_home = os.environ.get("JAVA_HOME")
    candidate = os.path.join(java_home, "bin", "java") if java_home else shutil.which("java")
    if not candidate or not os.access(candidate, os.X_OK):
        where = f"JAVA_HOME={java_home} has no bin/java" if java_home else "no `java` on PATH"
        raise UsageError(f"Java not found ({where}); Spark needs Java 17: install openjdk-17-jre-headless "
                         "or set JAVA_HOME")
    return candidate


def under_spark_submit() -> bool:
    """True when the driver was launched by spark-submit (it then owns master and conf)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def spark_session(settings: Settings):
    """A SparkSession: local master and project Python unless spark-submit set them."""
    if not under_spark_submit():
        require_java()
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        if settings.spark.master.startswith("local"):
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(settings.spark.app_name)
    if not under_spark_submit():
        builder = builder.master(settings.spark.master)
        builder = builder.config("spark.pyspark.python", os.environ["PYSPARK_PYTHON"])
        builder = builder.config("spark.ui.showConsoleProgress", "false")
    for key, value in settings.spark.conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def model_files(settings: Settings) -> list[str]:
    """Every model file the executors need: the registry, its KenLM binaries, the LID model, and the
    block stage's model and pinned KenLM files when it is in the cascade."""
    files = []
    if settings.perplexity.enabled:
        registry = str(resolve_path(settings.perplexity.registry))
        files.append(registry)
        for entry in load_registry(settings.perplexity.registry).values():
            path = resolve_path(entry.path)
            if not path.exists():
                raise UsageError(f"model file {entry.path} (from {settings.perplexity.registry}) not found")
            files.append(str(path))
    blocks = "blocks" in settings.extract.cascade
    if settings.langid.enabled or blocks:  # the block stage names each page's language for its KenLM pin
        files.append(str(resolve_path(settings.langid.model_path)) if settings.langid.model_path
                     else default_lid_model_path())
    if blocks:
        from warcplex.models import block_model

        if settings.extract.blocks_model:
            files.append(str(resolve_path(settings.extract.blocks_model)))
        files += [str(resolve_path(pin.path)) for pin in block_model(settings.extract.blocks_model).language_models.values()]
    return list(dict.fromkeys(files))  # a pinned KenLM file may also be the registry's
