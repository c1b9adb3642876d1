"""Stage: anti-join. The states stored at earlier levels, read as Spark reads them from the run's
Delta table (engine.store.deltaio: the JVM connector where Spark has it, else the files the table's
log lists): a level's first rows per state are anti-joined against their fingerprints on the narrow
columns (engine.search.dedupe). At any level size the join is Spark's."""
from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from engine.settings import Settings
from engine.store.deltaio import read_delta
from engine.store.runs import RunStore

__all__ = ["fingerprints", "stored"]


def stored(spark: SparkSession, store: RunStore, settings: Settings, depth: int | None = None) -> DataFrame:
    """The run's stored states (those of level ``depth`` alone, when given)."""
    return read_delta(spark, str(store.states_path), store.spark_schema, settings, depth=depth)


def fingerprints(spark: SparkSession, store: RunStore, settings: Settings) -> DataFrame:
    """The fingerprints (``_fp``, ``_fp2``) of every state the run has stored: what a level's states
    are anti-joined against (engine.search.dedupe)."""
    return stored(spark, store, settings).select("_fp", "_fp2")
