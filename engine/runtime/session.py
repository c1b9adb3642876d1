"""The Spark session: tuned for many small breadth-first levels, with the model's constants as
SQL session variables so that every action, invariant and ad-hoc query can name them."""
from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
from typing import Any, Iterator

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession

import engine.runtime.jvm_ext as jvm_ext
from engine.model.loader import Model
from engine.settings import Settings

__all__ = ["get_spark", "declare_constants", "sql_literal", "checkpoint", "persistent_rdd_ids", "unpersist_rdds"]


def get_spark(settings: Settings | None = None, app_name: str = "state-space-engine",
              conf: dict[str, str] | None = None) -> SparkSession:
    """The Spark session a command runs in: the active one where this process runs inside Spark
    already (a Databricks job, a notebook), else one started with ``settings.master``."""
    from pyspark import SparkContext

    settings = settings or Settings()
    starting = SparkContext._gateway is None and not os.environ.get("PYSPARK_GATEWAY_PORT")
    # The engine's JVM helpers (engine.runtime.jvm_ext), on the class path of a JVM this call starts.
    ext_jar = jvm_ext.class_path(settings) if starting and settings.fingerprint == "row-bytes" else None
    java_options = " ".join(o for o in ("-Dlog4j2.level=ERROR", settings.java_options) if o)
    builder = (
        SparkSession.builder.master(settings.master).appName(app_name)
        .config("spark.sql.shuffle.partitions", str(settings.shuffle_partitions))
        .config("spark.sql.adaptive.enabled", "true")
        # The seen states are read as one file list per level; above 32 paths Spark would list
        # them with a Spark job of its own every level.
        .config("spark.sql.sources.parallelPartitionDiscovery.threshold", "1000000")
        .config("spark.sql.codegen.cache.maxEntries", str(settings.codegen_cache))
        .config("spark.ui.enabled", "true" if settings.spark_ui else "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.ui.explainMode", settings.explain_mode)
        .config("spark.driver.memory", settings.driver_memory)
        .config("spark.memory.storageFraction", settings.storage_fraction)
        .config("spark.sql.ansi.enabled", "true")
        # Spark 4.3 can fuse a union's branches into one generated stage; its RDD is then one
        # MapPartitionsRDD over every branch, and the held union could no longer run each frontier
        # part's actions as one task (engine.search.expand.HeldExpansion._by_part). Each branch keeps
        # its own generated stage.
        .config("spark.sql.codegen.wholeStage.union.enabled", "false")
        .config("spark.sql.codegen.hugeMethodLimit", str(settings.huge_method_limit))
        .config("spark.hadoop.mapreduce.fileoutputcommitter.marksuccessfuljobs", "false")
        .config("spark.hadoop.parquet.enable.summary-metadata", "false")
        .config("spark.sql.parquet.compression.codec", "zstd")
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
    if starting:
        size_codegen_cache(spark)
    if settings.fingerprint == "row-bytes":
        jvm_ext.register(spark, settings)
    spark.sparkContext.setLogLevel("ERROR")
    # PySpark logs each error that carries a query context (an SQL fragment) at ERROR, with the JVM's
    # trace as JSON; the engine reports those errors itself, naming the model's file.
    from pyspark.logger import PySparkLogger
    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL)
    return spark


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


CODEGEN = "org.apache.spark.sql.catalyst.expressions.codegen.CodeGenerator$"


def size_codegen_cache(spark: SparkSession) -> None:
    """Make Spark's cache of generated classes as large as ``spark.sql.codegen.cache.maxEntries`` says.

    Spark sizes that cache once, when its code generator is first used, from the SQL settings of
    the thread that uses it; in the engine's runs that thread's settings need not be the session's,
    and the cache would hold Spark's default of 100 classes: a search whose levels run in Spark would
    compile the same code again each level. Loading the code generator here, on the thread that made the
    session, sizes it by the session's setting. (Classic Spark only: it reaches the JVM.)"""
    jvm = spark._jvm
    jvm.java.lang.Class.forName(CODEGEN, True, jvm.java.lang.Thread.currentThread().getContextClassLoader())


# MEMORY_AND_DISK with rows kept as objects in memory (PySpark's StorageLevel.MEMORY_AND_DISK is
# serialized; this is the JVM's).
ROWS_AS_OBJECTS = StorageLevel(True, True, False, True, 1)


def checkpoint(df: DataFrame, as_objects: bool = False) -> DataFrame:
    """``df`` materialized and cut from its plan, kept serialized: a few byte arrays a partition, in
    memory and spilled to disk beyond it. Spark's default for a checkpoint keeps rows as objects,
    which the collector traces at every full collection: a large level's successors held that way
    keep the heap's live set high, and the collector takes its time from the tasks'.

    ``as_objects``: rows kept as objects (still spilled to disk, serialized, beyond memory), for a
    checkpoint of moderate size read many times: a level's new states, which every action's branch
    of the next level reads (serialized, each read of a row is a copy through Java's
    ObjectInputStream)."""
    return df.localCheckpoint(eager=True, storageLevel=ROWS_AS_OBJECTS if as_objects
                              else StorageLevel.MEMORY_AND_DISK)  # PySpark's: serialized


def persistent_rdd_ids(spark: SparkSession) -> set[int]:
    """The ids of the RDDs Spark keeps cached (checkpoints among them), in one Py4J call: the Java
    set's own ``toString`` (iterating the map, or Py4J's ``str()`` of its key set, is a call per
    entry)."""
    return {int(x) for x in re.findall(r"-?\d+", spark.sparkContext._jsc.getPersistentRDDs().keySet().toString())}


def unpersist_rdds(spark: SparkSession, ids: set[int]) -> None:
    """Drop the cached blocks of the RDDs ``ids`` (those still cached), without waiting."""
    rdds = spark.sparkContext._jsc.getPersistentRDDs()
    for rdd_id in ids:
        rdd = rdds.get(rdd_id)
        if rdd is not None:
            rdd.unpersist(False)


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
