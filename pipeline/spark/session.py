"""The Spark side of a run: the SparkContext and the model files shipped to executors."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager

import yaml

from pipeline.config import Settings, resolve_path
from pipeline.spark.cds import BATCH_JAVA_OPTIONS, ClassArchive, require_java
from pipeline.model_cache import default_lid_model_path
from pipeline.redact import redact_text
from pipeline.model_registry import load_registry
from pipeline.user_errors import UsageError


def under_spark_submit() -> bool:
    """True when the driver was launched by spark-submit (it then owns master and conf)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


# Spark properties of a run started outside spark-submit, unless a preset or --set gives them:
# no web UI (`--set spark.conf.spark.ui.enabled=true` brings it back), no console progress bar,
# Python workers reused across tasks (each opens the models once), pyspark's daemon without its full garbage
# collection after every task (pipeline/spark/worker_daemon.py; warcplex is installed wherever such a run's workers
# run) and the JVM options above. Under spark-submit the cluster's own settings stand.
LOCAL_BATCH_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.python.worker.reuse": "true",
    "spark.python.daemon.module": "pipeline.spark.worker_daemon",
    "spark.driver.extraJavaOptions": BATCH_JAVA_OPTIONS,
}


def local_batch_conf(java: str) -> dict[str, str]:
    """:data:`LOCAL_BATCH_CONF`, the driver JVM also mapping the class-data archive when it has been made
    for this ``java`` (:mod:`pipeline.spark.cds`, ``make setup``)."""
    archive = ClassArchive(java, BATCH_JAVA_OPTIONS).java_option()
    if archive is None:
        return LOCAL_BATCH_CONF
    return {**LOCAL_BATCH_CONF, "spark.driver.extraJavaOptions": f"{BATCH_JAVA_OPTIONS} {archive}"}


def spark_context(settings: Settings):
    """A SparkContext: local master, project Python and batch settings unless spark-submit set them.

    The job only needs the context (one RDD of splits); a SparkSession would also load Spark
    SQL on the JVM side, about 2 CPU-seconds a run here. Stages that need DataFrames use
    :func:`spark_session`. A context already running in this process is the one returned, as it is
    (:func:`_warn_unapplied`).
    """
    from pyspark import SparkConf, SparkContext

    running = SparkContext._active_spark_context
    if running is not None:
        _warn_unapplied(settings, running)
        return running
    if not under_spark_submit():
        java = require_java()
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        os.environ.setdefault("SPARK_LAUNCHER_OPTS", BATCH_JAVA_OPTIONS)
        if settings.spark.master.startswith("local"):
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    conf = SparkConf().setAppName(settings.spark.app_name)
    if not under_spark_submit():
        conf.setMaster(settings.spark.master)
        conf.set("spark.pyspark.python", os.environ["PYSPARK_PYTHON"])
        for key, value in local_batch_conf(java).items():
            if key not in settings.spark.conf:
                conf.set(key, value)
    for key, value in settings.spark.conf.items():
        conf.set(key, value)
    try:
        sc = SparkContext.getOrCreate(conf)
    except Exception as exc:  # py4j's and Spark's own types: a master or property Spark refuses
        raise UsageError(f"Spark did not start (spark.master={settings.spark.master!r}): "
                         f"{redact_text(_start_error(exc))[:300]}") from None
    sc.setLogLevel("WARN")
    _quiet_loggers(sc)
    return sc


def _start_error(exc: Exception) -> str:
    """What made the context fail: the JVM's exception (class and message, e.g. an event-log directory that does
    not exist) when py4j carries one, else the first line of the error."""
    java = getattr(exc, "java_exception", None)
    if java is not None:
        try:
            return " ".join(str(java.toString()).split())
        except Exception:  # the gateway itself gone: the Python side's text below
            pass
    return next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)


def _warn_unapplied(settings: Settings, running) -> None:
    """One line on stderr naming the run's Spark settings that the context already running in this process (a
    notebook's, an earlier caller's) does not have: Spark reads them only when a context starts."""
    have = running.getConf()
    differ = [f"spark.conf.{key}" for key, value in settings.spark.conf.items() if have.get(key, None) != str(value)]
    if not under_spark_submit() and running.master != settings.spark.master:
        differ.insert(0, "spark.master")
    if differ:
        print(f"warcplex: a SparkContext is already running in this process ({running.master}); the run uses it "
              f"as it is, without {', '.join(differ)}", file=sys.stderr)


@contextmanager
def job_context(settings: Settings):
    """:func:`spark_context`'s context for the length of a run: stopped at its end if the run started it, left
    running if it was already running in this process (its owner stops it)."""
    from pyspark import SparkContext

    inherited = SparkContext._active_spark_context is not None
    sc = spark_context(settings)
    try:
        yield sc
    except Exception as exc:
        if _stopped(sc):  # Spark gave the context up under the run (a cluster master that never answered)
            raise UsageError(f"Spark stopped before the run ended (spark.master={settings.spark.master!r}); "
                             "its log above says why") from exc
        raise
    finally:
        if not inherited:
            sc.stop()


def _stopped(sc) -> bool:
    """True when Spark has stopped ``sc`` (its JVM still answering)."""
    try:
        return sc._jsc is None or bool(sc._jsc.sc().isStopped())
    except Exception:  # the JVM gone: not a stopped context but a lost driver, whose own error stands
        return False


# Loggers whose warnings every run would print and none says anything about the run: LogicalRDD's that a checkpointed
# plan's columns changed, when only their nullability did (the corpus stages checkpoint their keys), and the note that
# a long plan's text was truncated in a log line. Their errors still show.
QUIET_LOGGERS = ("org.apache.spark.sql.execution.LogicalRDD", "org.apache.spark.util.SparkStringUtils")


def _quiet_loggers(sc) -> None:
    """Raise :data:`QUIET_LOGGERS` to ERROR in the driver JVM's log4j 2 (where these warnings are logged); a cluster
    whose driver logs otherwise keeps its own levels."""
    log4j = sc._jvm.org.apache.logging.log4j
    try:
        for name in QUIET_LOGGERS:
            log4j.core.config.Configurator.setLevel(name, log4j.Level.ERROR)
    except Exception:  # a log level is never worth a failed run
        pass


# Spark keeps a pool of Python workers (a daemon and the workers it forks) per environment it gives them, and
# Spark SQL's Python runners add SPARK_SIMPLIFIED_TRACEBACK to that environment while this property is on (its
# default): the corpus stages' mapInArrow would then start a second daemon and a second set of workers on every
# executor beside the page pipeline's, each importing warcplex and its libraries again (about 1.5 of the 19
# CPU-seconds of `make run`). Off, both kinds of task share one pool, and an error in a UDF shows pyspark's own
# frames as the page pipeline's errors do.
ONE_WORKER_POOL = ("spark.sql.execution.pyspark.udf.simplifiedTraceback.enabled", "false")


def sql_session(sc):
    """A SparkSession on the context ``sc`` whose Python UDFs run in the page pipeline's pool of Python workers
    (:data:`ONE_WORKER_POOL`, unless the run's Spark properties set it)."""
    from pyspark.sql import SparkSession

    session = SparkSession(sc)
    key, value = ONE_WORKER_POOL
    if not sc.getConf().contains(key):
        session.conf.set(key, value)
    # Timestamps (warc_date) as Parquet's INT64 microseconds adjusted to UTC, as the split writer writes them,
    # not the legacy INT96 that other readers take for a time without a zone.
    session.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    return session


def spark_session(settings: Settings):
    """A SparkSession on :func:`spark_context`'s context, for stages that use DataFrames (:func:`sql_session`)."""
    return sql_session(spark_context(settings))


def _existing(setting: str, path: str | os.PathLike) -> str:
    """``path`` resolved, or a one-line error naming the setting that gave it."""
    resolved = resolve_path(path)
    if not resolved.is_file():
        raise UsageError(f"{setting}={path}: file not found")
    return str(resolved)


def model_files(settings: Settings) -> list[str]:
    """Every model file the executors need: the registry, its KenLM binaries, the LID model, and the
    block stage's model and pinned KenLM files when it is in the cascade.

    Each is checked here, before Spark starts: a missing or unreadable file is a one-line error naming
    its setting, not a stack trace from an executor.
    """
    files = []
    if settings.perplexity.enabled:
        files.append(_existing("perplexity.registry", settings.perplexity.registry))
        try:
            registry = load_registry(settings.perplexity.registry)
        except (OSError, ValueError, yaml.YAMLError) as exc:
            raise UsageError(f"perplexity.registry={settings.perplexity.registry}: "
                             f"{' '.join(str(exc).split())}") from None
        for entry in registry.values():
            path = resolve_path(entry.path)
            if not path.exists():
                raise UsageError(f"model file {entry.path} (from {settings.perplexity.registry}) not found")
            files.append(str(path))
    blocks = "blocks" in settings.extract.cascade
    if settings.langid.enabled or blocks:  # the block stage names each page's language for its KenLM pin
        files.append(_existing("langid.model_path", settings.langid.model_path) if settings.langid.model_path
                     else default_lid_model_path())
    if blocks:
        from pipeline.steps.blocks.model import block_model

        if settings.extract.blocks_model:
            files.append(_existing("extract.blocks_model", settings.extract.blocks_model))
        try:
            pins = block_model(settings.extract.blocks_model).language_models.values()
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise UsageError(f"extract.blocks_model={settings.extract.blocks_model}: not a block model "
                             f"({type(exc).__name__}: {' '.join(str(exc).split())[:200]})") from None
        files += [str(resolve_path(pin.path)) for pin in pins]
    outliers = (settings.pipeline.options.get("sore") or {}).get("outliers")
    if "sore" in settings.pipeline.steps and outliers:
        from pipeline.steps.sore import read_outlier_groups

        files.append(_existing("pipeline.options.sore.outliers", outliers))
        try:
            read_outlier_groups(files[-1])
        except (ValueError, yaml.YAMLError) as exc:
            raise UsageError(f"pipeline.options.sore.outliers={outliers}: {' '.join(str(exc).split())[:200]}") from None
    return list(dict.fromkeys(files))  # a pinned KenLM file may also be the registry's
