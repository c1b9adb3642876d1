"""The Spark session: tuned for many small breadth-first levels, with the model's constants as
SQL session variables so that every action, invariant and ad-hoc query can name them."""
from __future__ import annotations

import hashlib
import logging
import os
import re
from pathlib import Path
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession

import engine.search.fingerprint as fingerprint

import engine.runtime.java as java_runtime

import engine.runtime.jvm_ext as jvm_ext
from engine.runtime.class_archive import ClassArchive
from engine.model.loader import Model

__all__ = ["get_spark", "declare_constants", "sql_literal", "checkpoint", "persistent_rdd_ids", "unpersist_rdds",
           "JAVA_OPTIONS"]

# The JVM's defaults for a search (SSE_JAVA_OPTIONS replaces them):
# - the parallel (throughput) collector: a search is a batch job, and on 2 cores G1's concurrent work
#   competes with the tasks (bookkeeper's largest level: 20.4 s against 21.3 s expanding);
# - the optimizing compiler (C2) waits for ten times HotSpot's default invocation and loop counts.
#   A run's JIT compiles about 25,000 methods, C2 3,300 of them, for 28 s of CPU in a 35 s ledger
#   chaining run on 2 cores, most of it Spark's once-only start-up code (Janino, the SQL parser,
#   task serialization) that then competes with the first levels' tasks. Truly hot code (the
#   actions' per-row evaluation) still reaches C2 within a level. Ledger chaining 33.3 to 34.6 s →
#   31.4 to 32.6 s, kafka_kip320:C 46.7 → 43.8 s, bk_master_2b_sym 50.9 → 48.3 s (README).
JAVA_OPTIONS = ("-XX:+UseParallelGC -XX:Tier4InvocationThreshold=50000 -XX:Tier4MinInvocationThreshold=6000 "
                "-XX:Tier4CompileThreshold=150000 -XX:Tier4BackEdgeThreshold=400000")


def get_spark(master: str | None = None, app_name: str = "state-space-engine",
              conf: dict[str, str] | None = None) -> SparkSession:
    from pyspark import SparkContext

    master = master or os.environ.get("SSE_SPARK_MASTER") or "local[2]"
    # When this call starts the JVM (not on Databricks, where PySpark joins a running one): map the
    # class archive, or write it as this JVM exits (engine.runtime.class_archive). Before SSE_JAVA_OPTIONS,
    # whose own -Xlog options (a GC log) then still apply.
    archive, archive_options, ext_jar, java_home, code_cache = None, "", None, None, None
    if SparkContext._gateway is None and not os.environ.get("PYSPARK_GATEWAY_PORT"):
        # The Java runtime it starts (engine.runtime.java: Java 25's unless SSE_JAVA_HOME says otherwise).
        java_home = java_runtime.chosen()
        # The engine's fingerprint function (engine.runtime.jvm_ext), on the class path of the JVM it starts.
        ext_jar = jvm_ext.class_path() if fingerprint.requested() == fingerprint.ROW_BYTES else None
        archive = ClassArchive.configured(ext_jar or "", java_home)
        archive_options = archive.jvm_options() if archive is not None else ""
        code_cache = code_cache_folder(ext_jar, java_home)
    java_options = " ".join(o for o in ("-Dlog4j2.level=ERROR", archive_options,
                                        os.environ.get("SSE_JAVA_OPTIONS", JAVA_OPTIONS)) if o)
    builder = (
        SparkSession.builder.master(master).appName(app_name)
        # A level is often a few hundred rows: 200 shuffle partitions would be 200 tasks of nothing.
        .config("spark.sql.shuffle.partitions", os.environ.get("SSE_SHUFFLE_PARTITIONS", "4"))
        .config("spark.sql.adaptive.enabled", "true")
        # The seen states are read as one file list per level; above 32 paths Spark would list
        # them with a Spark job of its own every level.
        .config("spark.sql.sources.parallelPartitionDiscovery.threshold", "1000000")
        # A model's action union compiles a hundred or more generated classes (Janino) per level; with
        # Spark's default cache of 100 the cycle evicts every class before the next level needs it,
        # and each level compiled them all again (bookkeeper: 178 compiles, 20 s a level).
        .config("spark.sql.codegen.cache.maxEntries", os.environ.get("SSE_CODEGEN_CACHE", "10000"))
        .config("spark.ui.enabled", os.environ.get("SSE_SPARK_UI", "false"))
        .config("spark.ui.showConsoleProgress", "false")
        # Every SQL execution posts its plan as text for the UI; the default "formatted" explain of
        # the action union walked the plan several times a job (8 % of a small level's driver time).
        .config("spark.sql.ui.explainMode", os.environ.get("SSE_EXPLAIN_MODE", "simple"))
        .config("spark.driver.memory", os.environ.get("SSE_DRIVER_MEMORY", "6g"))
        # A level's checkpoints are MEMORY_AND_DISK: execution (the de-duplication's sorts) may push
        # them to disk down to a tenth of the unified memory, not Spark's default half
        # (bk_master_3b_sym's level 18 failed with UNABLE_TO_ACQUIRE_MEMORY with the default).
        .config("spark.memory.storageFraction", os.environ.get("SSE_STORAGE_FRACTION", "0.1"))
        .config("spark.sql.ansi.enabled", "true")
        # Spark 4.3 can fuse a union's branches into one generated stage; its RDD is then one
        # MapPartitionsRDD over every branch, and the held union could no longer run each frontier
        # part's actions as one task (engine.search.expand.HeldExpansion._by_part). Each branch keeps
        # its own generated stage.
        .config("spark.sql.codegen.wholeStage.union.enabled", "false")
        # A generated method over 8,000 bytes of bytecode is never compiled by HotSpot's JIT. Spark 4.3
        # generates code for higher-order functions, and a model's invariants over nested arrays make
        # one stage's method 13,265 bytes (kafka_kip320: its largest levels took twice as long,
        # interpreted by the JVM). Above the limit Spark compiles the operators one by one instead.
        .config("spark.sql.codegen.hugeMethodLimit", os.environ.get("SSE_HUGE_METHOD_LIMIT", "8000"))
        .config("spark.hadoop.mapreduce.fileoutputcommitter.marksuccessfuljobs", "false")
        .config("spark.hadoop.parquet.enable.summary-metadata", "false")
        .config("spark.sql.parquet.compression.codec", "zstd")
        .config("spark.driver.extraJavaOptions", java_options)
    )
    if os.environ.get("SSE_EVENT_LOG"):
        # Spark's event log (jobs, stages, tasks with their times) in this folder, uncompressed:
        # pipelines/event_log_balance.py reads it.
        folder = os.path.abspath(os.environ["SSE_EVENT_LOG"])
        os.makedirs(folder, exist_ok=True)
        builder = (builder.config("spark.eventLog.enabled", "true").config("spark.eventLog.dir", folder)
                   .config("spark.eventLog.compress", "false"))
    conf = dict(conf or {})
    if code_cache is not None:
        conf.setdefault(CODE_CACHE_CONF, str(code_cache))
        if parse_cache_wanted():
            # The parser's plans kept in the same folder (engine/runtime/jvm/ParseCache.java), a session extension.
            conf.setdefault(PARSE_CACHE_CONF, str(code_cache))
            conf["spark.sql.extensions"] = ",".join(
                e for e in (conf.get("spark.sql.extensions"), PARSE_CACHE_EXTENSION) if e)
    if ext_jar:
        # On the driver's class path (Py4J registers the function there) and shipped to executors
        # that run in JVMs of their own (a spark:// master), which deserialize it with each task.
        conf["spark.driver.extraClassPath"] = os.pathsep.join(
            p for p in (ext_jar, conf.get("spark.driver.extraClassPath")) if p)
        conf["spark.jars"] = ",".join(p for p in (ext_jar, conf.get("spark.jars")) if p)
    for k, v in conf.items():
        builder = builder.config(k, v)
    with java_runtime.launching(java_home):
        spark = builder.getOrCreate()
    size_codegen_cache(spark)
    if fingerprint.requested() == fingerprint.ROW_BYTES:
        jvm_ext.register(spark)
    if archive is not None:
        archive.started()
    spark.sparkContext.setLogLevel("ERROR")
    # PySpark logs each error that carries a query context (an SQL fragment) at ERROR, with the JVM's
    # trace as JSON; the engine reports those errors itself, naming the model's file.
    from pyspark.logger import PySparkLogger
    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL)
    return spark


CODEGEN = "org.apache.spark.sql.catalyst.expressions.codegen.CodeGenerator$"
CODE_CACHE_ENV = "SSE_CODE_CACHE"
CODE_CACHE_CONF = "spark.sse.codeCache.dir"  # the folder, read by CodeCache.register as the session starts


def code_cache_folder(ext_jar: str | None, java_home: str | None) -> Path | None:
    """Where Spark's generated classes are kept between runs (``engine/runtime/jvm/CodeCache.java``), or None.

    A cold run compiled every piece of generated Java source again with Janino: ledger chaining's 21
    sources in 38 compilations, 2.0 to 2.3 s, most of it while the driver plans the actions' union.
    The engine's jar puts a loader in front of Spark's cache of generated classes that keeps each
    compiled source's class files in this folder, named by the SHA-256 of the source, and defines
    them again in a later run instead of compiling. The folder is one per engine jar (its name
    digests the engine's Java sources, PySpark's version and the compiler) and Java runtime; it
    lives in the engine's cache folder, trimmed to 256 MiB (oldest used first).
    ``SSE_CODE_CACHE=off``: Spark's own cache alone. Needs the engine's jar (a JDK)."""
    setting = os.environ.get(CODE_CACHE_ENV, "").strip()
    if not ext_jar or setting.lower() in ("off", "0", "false", "no"):
        return None
    digest = hashlib.sha256(f"{Path(ext_jar).name}\0{java_home or ''}".encode()).hexdigest()[:16]
    return (Path(setting).expanduser() if setting else jvm_ext.cache_folder()) / f"codegen-{digest}"


PARSE_CACHE_ENV = "SSE_PARSE_CACHE"
PARSE_CACHE_CONF = "spark.sse.parseCache.dir"  # read by ParseCache as each session's parser is made
PARSE_CACHE_EXTENSION = "sse.ParseCache"


def parse_cache_wanted() -> bool:
    """Whether a JVM this process starts keeps its parser's plans on disk (``engine/runtime/jvm/ParseCache.java``).

    A cold JVM parses slowly: ANTLR builds its prediction tables rule by rule as it meets them, and
    its code runs interpreted until the JIT compiles it. Ledger chaining's 14 SQL files took 0.52 s
    to parse in a fresh session, 0.05 s a second time; compiling ANTLR took 1.4 s of C2's time in a
    cold check. The parse cache keeps what the parser made of each text (a plan or an expression, as
    Java serialization) in the code cache's folder, named by the SHA-256 of the text and the
    session's SQL settings, and a later run reads it back, its expression ids made fresh. It needs
    the code cache (the engine's jar); ``SSE_PARSE_CACHE=off``: Spark's parser alone."""
    return os.environ.get(PARSE_CACHE_ENV, "").strip().lower() not in ("off", "0", "false", "no")


def parse_cache_counts(spark: SparkSession) -> dict[str, int] | None:
    """This JVM's parse cache figures so far (plans read from disk, parsed by Spark, written, found
    unreadable, not serializable), or None when no session of it parses through the cache."""
    if not spark.sparkContext.getConf().get(PARSE_CACHE_CONF, "") or not spark._jvm.sse.ParseCache.installed():
        return None
    hits, parsed, written, unreadable, unserializable = map(int, spark._jvm.sse.ParseCache.counts().split(","))
    return {"hits": hits, "parsed": parsed, "written": written, "unreadable": unreadable,
            "unserializable": unserializable}


def code_cache_counts(spark: SparkSession) -> dict[str, int] | None:
    """This JVM's code cache figures so far: sources whose classes were defined from disk (``hits``),
    compiled by Spark, written to disk, found unreadable; None when the session has no code cache
    (none asked for, or this Spark's cache could not be reached: ``CodeCache.installed``)."""
    if not spark.sparkContext.getConf().get(CODE_CACHE_CONF, "") or not spark._jvm.sse.CodeCache.installed():
        return None
    hits, compiled, written, unreadable = map(int, spark._jvm.sse.CodeCache.counts().split(","))
    return {"hits": hits, "compiled": compiled, "written": written, "unreadable": unreadable}


def size_codegen_cache(spark: SparkSession) -> None:
    """Make Spark's cache of generated classes as large as ``spark.sql.codegen.cache.maxEntries`` says.

    Spark sizes that cache once, when its code generator is first used, from the SQL settings of
    the thread that uses it. In the engine's runs that thread's settings were not the session's:
    the cache held 100 classes, Spark's default, not the 10,000 asked for (read back through
    reflection after a check). A search whose levels ran in Spark alone then compiled the same code
    again each level: ledger chaining with two clients, 837 to 974 compilations in 13 levels, 199
    with the cache sized here. Loading the code generator here, on the thread that made the
    session, sizes it by the session's setting."""
    jvm = spark._jvm
    jvm.java.lang.Class.forName(CODEGEN, True, jvm.java.lang.Thread.currentThread().getContextClassLoader())


# MEMORY_AND_DISK with rows kept as objects in memory (PySpark's StorageLevel.MEMORY_AND_DISK is
# serialized; this is the JVM's).
ROWS_AS_OBJECTS = StorageLevel(True, True, False, True, 1)


def checkpoint(df: DataFrame, as_objects: bool = False) -> DataFrame:
    """``df`` materialized and cut from its plan, kept serialized: a few byte arrays a partition, in
    memory and spilled to disk beyond it. Spark's default for a checkpoint keeps rows as objects,
    which the collector traces at every full collection: bookkeeper's largest level's successors
    (2.5 to 3 GB) held that way kept the heap's live set high, and the collector took 23 % of the
    tasks' time on two cores (README: One core against two).

    ``as_objects``: rows kept as objects (still spilled to disk, serialized, beyond memory), for a
    checkpoint of moderate size read many times: a level's new states, which every action's branch
    of the next level reads (serialized, each read of a row was a copy through Java's
    ObjectInputStream: 13 % of bk_v413_rrf's task time in JFR)."""
    return df.localCheckpoint(eager=True, storageLevel=ROWS_AS_OBJECTS if as_objects
                              else StorageLevel.MEMORY_AND_DISK)  # PySpark's: serialized


def persistent_rdd_ids(spark: SparkSession) -> set[int]:
    """The ids of the RDDs Spark keeps cached (checkpoints among them), in one Py4J call: the Java
    set's own ``toString`` (iterating the map, or Py4J's ``str()`` of its key set, is a call per
    entry: 20 ms a level on ledger chaining, where a small level costs 0.1 to 0.15 s in all)."""
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
