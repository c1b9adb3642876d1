"""Stage: commit. A level's new states put in TLC's order and numbered (``_ord``), written as Parquet
by Spark into the level's folder of the run's states table, and committed as one Delta commit that
carries the level's figures (engine.store.runs: idempotent by the run's transaction id, so a run
killed at any point resumes from its last committed level)."""
from __future__ import annotations

import uuid
from pathlib import Path
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from engine.errors import WarehouseError
from engine.search.invariants import InvariantSuite
from engine.store.runs import RunStore

__all__ = ["check_visible", "dense", "in_tlc_order", "numbered_on_driver", "tally", "tally_arrow",
           "within_model", "write"]

# TLC's order within a level: by the path that met the state first, then by fingerprint.
ORDER = ["_key", "_fp", "_fp2"]
# ``monotonically_increasing_id`` puts the partition in the bits from 33 up.
_ROW_BITS = 33
_MAX_PARTITIONS = 1024


def in_tlc_order(new: DataFrame, depth: int, keep: Callable[[DataFrame], DataFrame], base: int = 0) -> DataFrame:
    """``new`` (one row per state) in TLC's order, numbered ``_ord`` ``base``, ``base`` + 1, ... in that order, with
    ``_depth``. Range-partitioned and sorted within partitions, so the numbers come from each row's
    place in its partition and the partitions' sizes: no single task sees the whole level. The sorted
    rows are ``keep``-t (persisted): the partitions' sizes and everything after read them."""
    spark = new.sparkSession
    parts = min(_MAX_PARTITIONS, int(spark.conf.get("spark.sql.shuffle.partitions")))
    ranged = keep(new.repartitionByRange(parts, *ORDER).sortWithinPartitions(*ORDER)
                  .withColumn("_mid", F.monotonically_increasing_id()))
    return dense(ranged, "_mid", "_ord", base).withColumn("_depth", F.lit(depth).cast("int")).drop("_mid")


def dense(rows: DataFrame, ids: str, out: str, base: int = 0) -> DataFrame:
    """``rows`` (computed once: a checkpoint) with ``out``: ``base`` plus the row's place in the order of
    ``ids`` (``monotonically_increasing_id``'s, numbered in that order), 0, 1, ... without gaps. The
    partitions' sizes come from one job over ``ids``; each row's number from its place in its
    partition, so no single task sees every row. (The raw ids carry the partition in their high bits:
    past a thousand partitions they would overflow the successors' order key, ``_parent.ord`` times
    2^20.)"""
    sizes = {int(r["p"]): int(r["n"]) for r in
             rows.groupBy(F.shiftright(ids, _ROW_BITS).alias("p")).agg(F.count(F.lit(1)).alias("n")).collect()}
    offsets, total = [], base
    for p in range(max(sizes, default=-1) + 1):
        offsets.append(total)
        total += sizes.get(p, 0)
    start = F.element_at(F.array(*[F.lit(o).cast("bigint") for o in offsets] or [F.lit(base).cast("bigint")]),
                         (F.shiftright(ids, _ROW_BITS) + 1).cast("int"))
    return rows.withColumn(out, start + F.col(ids).bitwiseAND(F.lit((1 << _ROW_BITS) - 1)))


def numbered_on_driver(new: pa.Table, depth: int) -> pa.Table:
    """A small level's new states (collected to the driver), in TLC's order, numbered and with ``_depth``."""
    order = pc.sort_indices(new, sort_keys=[(c, "ascending") for c in ORDER])
    ordered = new.take(order)
    return (ordered.append_column("_ord", pa.array(np.arange(ordered.num_rows, dtype=np.int64)))
            .append_column("_depth", pa.array(np.full(ordered.num_rows, depth, dtype=np.int32))))


def within_model(level: pa.Table) -> pa.Table:
    """A level held on the driver, its states within the constraint: the table itself where all are (a
    filter copies every nested column, seconds for a large level)."""
    inside = level["_in_model"]
    if inside.null_count == 0 and pc.all(inside).as_py() is not False:
        return level
    return level.filter(pc.fill_null(inside, False))


def tally(level: DataFrame, suite: InvariantSuite) -> tuple[int, int, dict[str, int]]:
    """(new states within the constraint, outside it, {invariant: states that break it}) in one job."""
    aggs = [F.count_if(F.col("_in_model")).alias("i"), F.count_if(~F.col("_in_model")).alias("o"),
            *[F.count_if(~F.col(suite.column(n))).alias(f"f{k}") for k, n in enumerate(suite.names)]]
    row = level.agg(*aggs).collect()[0]
    failing = {n: int(row[f"f{k}"]) for k, n in enumerate(suite.names) if int(row[f"f{k}"])}
    return int(row["i"]), int(row["o"]), failing


def tally_arrow(level: pa.Table, suite: InvariantSuite) -> tuple[int, int, dict[str, int]]:
    """``tally`` for a level held on the driver."""
    inside = int(pc.sum(level["_in_model"]).as_py() or 0) if level.num_rows else 0
    failing = {}
    for n in suite.names:
        bad = level.num_rows - int(pc.sum(pc.fill_null(level[suite.column(n)], False)).as_py() or 0) \
            if level.num_rows else 0
        if bad:
            failing[n] = bad
    return inside, level.num_rows - inside, failing


def write(level: DataFrame | pa.Table, store: RunStore, depth: int) -> Path:
    """The level's states within the constraint written as Parquet files, in TLC's order, into a folder
    of their own that the level's commit lists (``RunStore.attempt_dir``): by Spark, a file per
    partition; a level held on the driver, as one file from here. The folder written."""
    if isinstance(level, pa.Table):
        store.write_level(depth, within_model(level))
        return store.level_dir(depth)
    folder = store.attempt_dir(depth)
    columns = [f.name for f in store.spark_schema.fields]
    (level.where("_in_model").select(*columns).write.mode("overwrite")
     .option("compression", "zstd").parquet(str(folder)))
    return folder


def check_visible(spark: SparkSession, warehouse: Path) -> None:
    """Refuse a warehouse that Spark's executors and this process do not both see: a file this
    process writes must be read by a Spark job, and the file a Spark job writes must appear here
    (the run's commits list the files Spark wrote). Checked before anything of the run is written."""
    warehouse = Path(warehouse)
    probe = warehouse / "_probes" / uuid.uuid4().hex
    try:
        probe.mkdir(parents=True)
        (probe / "mine.txt").write_text("sse\n")
    except OSError as exc:
        raise WarehouseError(f"warehouse {warehouse} is not writable here: {exc}") from None
    try:
        try:
            got = spark.read.text(str(probe / "mine.txt")).collect()
        except Exception as exc:  # noqa: BLE001 - any failure to read means: not visible
            got, why = None, str(exc).strip().splitlines()[0]
        if not got or got[0][0] != "sse":
            raise WarehouseError(
                f"warehouse {warehouse}: Spark's executors cannot read what this process writes there "
                f"({why if got is None else 'they read other content'}); use a path on a filesystem that "
                "the driver, this process and every executor mount (a shared filesystem, or a Unity Catalog "
                "volume on Databricks)")
        spark.createDataFrame([("sse",)], "v string").coalesce(1).write.mode("overwrite").text(str(probe / "theirs"))
        if not any(p.name.startswith("part-") for p in (probe / "theirs").glob("*")):
            raise WarehouseError(
                f"warehouse {warehouse}: what Spark's executors write there does not appear in this process's "
                "view of it; use a path on a filesystem that the driver, this process and every executor mount")
    finally:
        import shutil
        shutil.rmtree(probe, ignore_errors=True)
