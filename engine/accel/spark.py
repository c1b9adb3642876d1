"""Spark's internals the local accelerator reaches through Py4J, in classic local mode only: its
checkpoints kept as row objects, the cached RDDs by id, and Spark's cache of generated classes sized
as the session asks."""
from __future__ import annotations

import re

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession

__all__ = ["checkpoint", "persistent_rdd_ids", "size_codegen_cache", "unpersist_rdds", "ROWS_AS_OBJECTS"]


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


