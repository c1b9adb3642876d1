"""Reading a run's Delta tables into Spark: natively through the Delta Lake connector where its
classes are on Spark's classpath (Databricks, or a session started with delta-spark's jars), else
through delta-rs, which lists the table's current Parquet files for Spark to read. Both see the
same table: delta-rs resolves the log exactly as the connector does (adds minus removes).

The setting ``delta`` (SSE_DELTA) ``native`` or ``delta-rs`` forces one path; the default, ``auto``, probes.
"""
from __future__ import annotations

import os
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc

from deltalake import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from engine.errors import WarehouseError
from engine.settings import Settings

__all__ = ["delta_mode", "read_delta"]

_CONNECTOR_CLASS = "io.delta.tables.DeltaTable"


def delta_mode(spark: SparkSession, settings: Settings | None = None) -> str:
    """``native`` when the Delta connector can read and write for this session, else ``delta-rs``."""
    forced = (settings or Settings()).delta
    if forced != "auto":
        return forced
    from engine.runtime.session import is_classic
    if not is_classic(spark):
        return "native" if _connector_behind(spark) else "delta-rs"
    jvm = spark._jvm
    try:
        jvm.java.lang.Class.forName(_CONNECTOR_CLASS, False, jvm.Thread.currentThread().getContextClassLoader())
    except Exception:
        return "delta-rs"
    return "native"


_BEHIND: dict[str, bool] = {}  # Spark Connect session id -> whether its server has the connector


def _connector_behind(spark: SparkSession) -> bool:
    """Whether the Spark Connect server behind ``spark`` has the Delta connector (Databricks has it
    built in): a delta read of a path that does not exist is analyzed, and only a server without the
    connector says the data source itself is unknown. Asked once a session."""
    key = str(getattr(spark, "session_id", id(spark)))
    if key not in _BEHIND:
        try:
            spark.read.format("delta").load("/sse-probe/no-such-table").schema
            _BEHIND[key] = True
        except Exception as exc:  # noqa: BLE001 - the error's text is the answer
            _BEHIND[key] = "DATA_SOURCE_NOT_FOUND" not in str(exc)
    return _BEHIND[key]


def read_delta(spark: SparkSession, path: str, schema: StructType | None = None,
               settings: Settings | None = None, depth: int | None = None) -> DataFrame:
    """The table's current rows as a DataFrame (those of ``_depth = depth`` alone, when given);
    ``schema`` types an empty table. A level's rows come from the files whose ``_depth`` range in the
    log holds it (the connector skips the others itself; through delta-rs they are left out here),
    and from every file without such statistics."""
    level = f"_depth = {int(depth)}" if depth is not None else None
    if delta_mode(spark, settings) == "native":
        try:
            df = spark.read.format("delta").load(path)
        except Exception as exc:
            if "DATA_SOURCE_NOT_FOUND" in str(exc):
                raise WarehouseError(f"{path}: SSE_DELTA=native, but the Delta Lake connector is not on "
                                     "Spark's classpath (use SSE_DELTA=auto or delta-rs)") from None
            raise
        return df if level is None else df.where(level)
    try:
        dt = DeltaTable(path)
        files = dt.file_uris() if depth is None else _files_holding(dt, path, int(depth))
    except Exception as exc:
        raise WarehouseError(f"{path}: not a readable Delta table ({exc})") from None
    if not files:
        return spark.createDataFrame([], schema or from_arrow_schema(pa.schema(dt.schema().to_arrow())))
    reader = spark.read.schema(schema) if schema is not None else spark.read
    df = reader.parquet(*files)
    return df if level is None else df.where(level)


def _files_holding(dt: DeltaTable, path: str, depth: int) -> list[str]:
    """The files of the table at ``path`` (a folder) whose ``_depth`` statistics may hold ``depth``
    (those without any too)."""
    adds = pa.table(dt.get_add_actions(flatten=True))
    if "min._depth" not in adds.column_names or "max._depth" not in adds.column_names:
        return dt.file_uris()
    lo, hi = adds["min._depth"], adds["max._depth"]
    keep = pc.or_kleene(pc.or_kleene(pc.is_null(lo), pc.is_null(hi)),
                        pc.and_(pc.less_equal(lo, depth), pc.greater_equal(hi, depth)))
    # (the log's paths are relative to the table, and URL-encoded)
    return [os.path.join(path, unquote(p)) for p in pc.filter(adds["path"], keep).to_pylist()]
