"""The Spark session: tuned for many small breadth-first levels, with the model's constants as
SQL session variables so that every action, invariant and ad-hoc query can name them."""
from __future__ import annotations

import contextlib
import logging
import os
import sys
from typing import Any, Callable, Iterator, Sequence

from pyspark.sql import Column, DataFrame, Observation, SparkSession

import engine.runtime.jvm_ext as jvm_ext
from engine.errors import UsageError
from engine.model.loader import Model
from engine.settings import Settings

__all__ = ["get_spark", "kept_observed", "quiet_py4j_root_records", "declare_constants", "interpreted",
           "is_classic", "sql_literal", "FACTORY_MODE"]


def get_spark(settings: Settings | None = None, app_name: str = "state-space-engine",
              conf: dict[str, str] | None = None) -> SparkSession:
    """The Spark session a command runs in: a Spark Connect session where the settings name a
    ``remote`` (Databricks serverless and standard clusters), else the active one where this process
    runs inside Spark already (a Databricks job, a notebook), else one started with ``settings.master``."""
    settings = settings or Settings()
    if settings.remote:
        return _connect(settings, app_name)
    return _classic(settings, app_name, conf)


def is_classic(spark: SparkSession) -> bool:
    """Whether ``spark`` is a classic session (a JVM this process reaches through Py4J), not Spark
    Connect's."""
    return not type(spark).__module__.startswith("pyspark.sql.connect")


# SQL settings a session gets whether the engine starts it or joins it (through Spark Connect too).
def _sql_settings(settings: Settings) -> dict[str, str]:
    return {
        "spark.sql.shuffle.partitions": str(settings.shuffle_partitions),
        "spark.sql.adaptive.enabled": "true",
        "spark.sql.ansi.enabled": "true",
        "spark.sql.parquet.compression.codec": "zstd",
        # The seen states are read as one file list per level; above 32 paths Spark would list
        # them with a Spark job of its own every level.
        "spark.sql.sources.parallelPartitionDiscovery.threshold": "1000000",
    }


def _connect(settings: Settings, app_name: str) -> SparkSession:
    """A Spark Connect session at ``settings.remote`` (``sc://HOST:PORT``), refused at once when
    nothing listens there (the client would otherwise retry for minutes)."""
    from urllib.parse import urlparse
    url = settings.remote
    parsed = urlparse(url)
    if parsed.scheme != "sc" or not parsed.hostname:
        raise UsageError(f"--remote {url!r}: a Spark Connect address is sc://HOST:PORT")
    port = parsed.port or 15002
    import socket
    try:
        with socket.create_connection((parsed.hostname, port), timeout=5):
            pass
    except OSError as exc:
        raise UsageError(f"--remote {url}: nothing listens at {parsed.hostname}:{port} ({exc.strerror or exc}); "
                         "start a Spark Connect server there (sbin/start-connect-server.sh) or name another") from None
    try:
        from pyspark.sql.connect.session import SparkSession as ConnectSession  # noqa: F401
    except ImportError as exc:
        raise UsageError(f"--remote {url}: the Spark Connect client is not installed ({exc}); "
                         "pip install 'pyspark[connect]'") from None
    spark = SparkSession.builder.remote(url).appName(app_name).getOrCreate()
    _bound_retries(spark, url, settings.connect_wait)
    for key, value in _sql_settings(settings).items():
        try:
            spark.conf.set(key, value)
        except Exception:  # noqa: BLE001 - a setting the server does not let a client change
            pass
    return spark


def _bound_retries(spark: SparkSession, url: str, seconds: int) -> None:
    """The client's retries of an unreachable server spread over about ``seconds`` (PySpark's own policy
    waits at least 10 minutes, in backoffs growing to a minute, and says nothing meanwhile), and said
    on standard error when they start; past them the call fails with the gRPC error that
    ``engine.errors.spark_lost`` reads as Spark lost."""
    client = getattr(spark, "client", None)
    if not hasattr(client, "set_retry_policies"):
        return  # (a client without policies keeps its own retries: PySpark 4.0 to 4.3 have them)
    import time
    from pyspark.sql.connect.client.retries import DefaultPolicy
    cap = 1000 if seconds < 60 else 10000
    waits, backoff, total = 0, 50, 0
    while total < seconds * 1000:
        total += min(backoff, cap)
        backoff *= 4
        waits += 1

    class Policy(DefaultPolicy):
        since = last = float("-inf")

        def can_retry(self, e: BaseException) -> bool:
            if not super().can_retry(e):
                return False
            now = time.monotonic()
            if now - self.last > cap / 1000 + 5:  # (a new outage: no retry just before)
                self.since = now
                print(f"engine: the Spark Connect server at {url} does not answer; retrying for up to {seconds} s "
                      "(setting connect_wait)", file=sys.stderr, flush=True)
            self.last = now
            # An outage outlasting the wait fails every call at once, the cleanup's too.
            return now - self.since < seconds

    client.set_retry_policies([Policy(max_retries=waits, initial_backoff=50, backoff_multiplier=4.0,
                                      max_backoff=cap)])


def _classic(settings: Settings, app_name: str, conf: dict[str, str] | None) -> SparkSession:
    from pyspark import SparkContext

    starting = SparkContext._gateway is None and not os.environ.get("PYSPARK_GATEWAY_PORT")
    # The engine's JVM helpers (engine.runtime.jvm_ext), on the class path of a JVM this call starts: a
    # local one whatever the fingerprint (the accelerator uses the other helpers with JSON fingerprints
    # too, and a JVM started without them cannot always add them later), any one for row-bytes.
    wanted = settings.master.startswith("local") or settings.fingerprint == "row-bytes"
    ext_jar = jvm_ext.class_path(settings) if starting and wanted else None
    java_options = " ".join(o for o in ("-Dlog4j2.level=ERROR", settings.java_options) if o)
    builder = SparkSession.builder.master(settings.master).appName(app_name)
    for key, value in _sql_settings(settings).items():
        builder = builder.config(key, value)
    builder = (
        builder
        .config("spark.sql.codegen.cache.maxEntries", str(settings.codegen_cache))
        .config("spark.ui.enabled", "true" if settings.spark_ui else "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.ui.explainMode", settings.explain_mode)
        .config("spark.driver.memory", settings.driver_memory)
        .config("spark.memory.storageFraction", settings.storage_fraction)
        .config("spark.rdd.compress", "true" if settings.rdd_compress else "false")
        # Spark 4.3 can fuse a union's branches into one generated stage; its RDD is then one
        # MapPartitionsRDD over every branch, and the accelerator's held union could no longer run
        # each frontier part's actions as one task. Each branch keeps its own generated stage.
        .config("spark.sql.codegen.wholeStage.union.enabled", "false")
        .config("spark.sql.codegen.hugeMethodLimit", str(settings.huge_method_limit))
        .config("spark.hadoop.mapreduce.fileoutputcommitter.marksuccessfuljobs", "false")
        .config("spark.hadoop.parquet.enable.summary-metadata", "false")
        .config("spark.driver.extraJavaOptions", java_options)
    )
    if settings.event_log is not None:
        folder = os.path.abspath(settings.event_log)
        os.makedirs(folder, exist_ok=True)
        builder = (builder.config("spark.eventLog.enabled", "true").config("spark.eventLog.dir", folder)
                   .config("spark.eventLog.compress", "false"))
    conf = dict(conf or {})
    if ext_jar:
        # On the driver's class path (Py4J registers the function there) and shipped to executors
        # that run in JVMs of their own (a spark:// master), which deserialize it with each task.
        conf["spark.driver.extraClassPath"] = os.pathsep.join(
            p for p in (ext_jar, conf.get("spark.driver.extraClassPath")) if p)
        conf["spark.jars"] = ",".join(p for p in (ext_jar, conf.get("spark.jars")) if p)
    for k, v in conf.items():
        builder = builder.config(k, v)
    with _stdout_to_stderr():
        spark = builder.getOrCreate()
    if starting and spark.sparkContext.master.startswith("local"):
        from engine.accel.spark import size_codegen_cache
        size_codegen_cache(spark)
    if settings.fingerprint == "row-bytes":
        jvm_ext.register(spark, settings)
    spark.sparkContext.setLogLevel("ERROR")
    # PySpark logs each error that carries a query context (an SQL fragment) at ERROR, with the JVM's
    # trace as JSON; the engine reports those errors itself, naming the model's file.
    from pyspark.logger import PySparkLogger
    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL)
    quiet_py4j_root_records()
    return spark


def _not_from_py4j(record: logging.LogRecord) -> bool:
    return "py4j" not in os.path.normpath(record.pathname).split(os.sep)


def quiet_py4j_root_records() -> None:
    """Py4J logs a lost connection to the JVM on the root logger, with its traceback (which also makes
    Python's logging print to standard error); the engine reports a Spark lost under a command itself
    (engine.errors.spark_lost), in one line. Records Py4J logs on its own loggers are left alone."""
    root = logging.getLogger()
    if _not_from_py4j not in root.filters:
        root.addFilter(_not_from_py4j)


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """While PySpark starts the JVM, the process's standard output pointed at its standard error,
    which the JVM inherits: what a JVM prints there would otherwise land in ``--json`` output."""
    saved = None
    try:
        sys.stdout.flush()
        saved = os.dup(1)
        os.dup2(2, 1)
    except (OSError, ValueError):  # no such descriptors (an embedding host): left as they are
        saved = None
    try:
        yield
    finally:
        if saved is not None:
            os.dup2(saved, 1)
            os.close(saved)


def sql_literal(value: Any, sql_type: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, list):
        inner = ", ".join(sql_literal(v, "") for v in value)
        return f"CAST(array({inner}) AS {sql_type})"
    raise TypeError(f"cannot write {value!r} as SQL")


def declare_constants(spark: SparkSession, model: Model, constants: dict[str, Any]) -> None:
    """Each constant becomes ``DECLARE VARIABLE``: SQL names it directly (sets are sorted arrays)."""
    for name, const in model.constants.items():
        lit = sql_literal(constants[name], const.sql_type)
        spark.sql(f"DECLARE OR REPLACE VARIABLE `{name}` {const.sql_type} DEFAULT {lit}")


FACTORY_MODE = "spark.sql.codegen.factoryMode"  # how expressions outside whole-stage code are evaluated
_CODEGEN_CONFS = {"spark.sql.codegen.wholeStage": "false", FACTORY_MODE: "NO_CODEGEN"}


@contextlib.contextmanager
def interpreted(spark: SparkSession, on: bool = True) -> Iterator[None]:
    """Spark jobs run in the block evaluate every expression interpreted (no generated Java): for a
    small level, generating and compiling the actions' code costs more than it saves. The session's
    settings are restored after it."""
    if not on:
        yield
        return
    before = {k: spark.conf.get(k, None) for k in _CODEGEN_CONFS}
    for k, v in _CODEGEN_CONFS.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


def kept_observed(df: DataFrame, keep: Callable[[DataFrame], DataFrame],
                  metrics: Sequence[Column]) -> tuple[DataFrame, Callable[..., dict[str, Any]]]:
    """``keep(df)`` (a checkpoint), and what reads ``metrics`` (aggregates, each aliased) over its rows:
    observed by the job that keeps it, not a job of their own. The reader takes aggregates that metrics
    cannot observe (distinct counts), computed in one job over the kept rows; where the session reported
    no metrics for the checkpoint (Spark Connect), ``metrics`` are computed in that job too."""
    observed = Observation()
    first, *rest = metrics
    kept = keep(df.observe(observed, first, *rest))

    def read(*more: Column) -> dict[str, Any]:
        got = dict(observed.get)
        aggs = [*([] if got else metrics), *more]
        if aggs:
            got.update(kept.agg(*aggs).collect()[0].asDict())
        return got
    return kept, read
