"""The seen fingerprints in the JVM that runs the actions' tasks, to send only new states' rows.

A level's successors are mostly states met before, so converting every successor's whole row to
Arrow and sending it to the driver, which then keeps the new ones, is mostly waste. In Spark's
local mode the tasks run in the driver's JVM, so the driver keeps a copy of the stored states'
fingerprints there (``sse_seen``, engine/runtime/jvm/SeenSet.java, TLC's fingerprint set), grown
after each committed level, and the actions' job replaces the state, constraint and invariant
columns of a successor whose fingerprint is in it by NULL (``_seen`` says which): its narrow
columns (fingerprints, order key, parent, action) still count it as generated, for the deadlock
check and for TLC's order, and the driver's anti-join still decides what is new. ``check`` refuses
a level whose new states have ``_seen`` set: that would be a fingerprint the driver did not store,
a wrong search rather than a slow one.

Repeats within a level are blanked too (``repeats``, the function's form with the row's ``_key``):
the first row of the level's job to meet a fingerprint keeps the state columns, every other row
with it is blanked (on a large level, often most of its successors), so their rows are neither
converted to Arrow, checkpointed whole nor given invariants. That row need not be the
first in TLC's order: the driver takes a new state's path columns (``PATH``) from the first row in
TLC's order and its state columns from the row that kept them (``holders``, ``with_holders``). The
driver opens the level before each job (``open_level``). With the setting ``level_filter`` off,
only the stored states are blanked.

Above ``driver_seen_max`` stored states the driver lets the stored fingerprints go (its memory stays
flat) and only repeats within a level are blanked (``forget_stored``): a level's set is its own
fingerprints, at most a sliced level's share (settings.slice_successors). Off (the columns pass
through) on a cluster (its executors are other JVMs), without the engine's JVM functions, and with
the setting ``seen_filter`` off.
"""
from __future__ import annotations

import os
import tempfile
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession

import engine.accel.arrow_level as arrow_level

import engine.runtime.jvm_ext as jvm_ext
from engine.settings import Settings

__all__ = ["PATH", "SEEN", "SeenFilter", "pairs_array", "pairs_file"]

SEEN = "_seen"
# The columns that differ between two rows of one state: the path by which each met it.
PATH = ["_parent_fp", "_parent_fp2", "_parent_ord", "_key", "_action"]


def pairs_array(fps: pa.Table) -> np.ndarray:
    """The fingerprints of ``fps`` (``_fp``, ``_fp2``) as rows of two little-endian longs."""
    pairs = np.empty((fps.num_rows, 2), dtype="<i8")
    pairs[:, 0] = fps["_fp"].to_numpy()
    pairs[:, 1] = fps["_fp2"].to_numpy()
    return pairs


@contextmanager
def pairs_file(folder: Path, tables: Iterable[pa.Table]) -> Iterator[str]:
    """A file in ``folder`` of the fingerprints of ``tables``, little-endian pairs of longs (what the
    engine's JVM classes read: ``SeenSet.readPairs``), removed after the block."""
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".seen-", suffix=".bin")
    try:
        with os.fdopen(fd, "wb") as f:
            for t in tables:
                f.write(pairs_array(t).tobytes())
        yield tmp
    finally:
        os.unlink(tmp)


class SeenFilter:
    """The set of one run's stored fingerprints in the JVM, and the SQL that uses it."""

    def __init__(self, spark: SparkSession, folder: Path, settings: Settings | None = None):
        self.spark, self.folder = spark, folder
        self.settings = settings = settings or Settings()
        self.name = f"sse-{uuid.uuid4().hex}"
        self.on = (settings.seen_filter and spark.sparkContext.master.startswith("local") and jvm_ext.use(spark, "SeenSet", settings, "seen states in the tasks' JVM",
                                                "off, every successor sent to the driver whole"))
        self.count = 0  # fingerprints in the JVM's set
        self.repeats = self.on and settings.level_filter
        self.stored = self.on  # the stored states' fingerprints are added (until ``forget_stored``)
        self._class = self._add_bytes = self._level = None

    def rename(self, name: str) -> None:
        """Use the set ``name`` (a plan made for it is run: ``HeldExpansion.adopt``), emptied; before
        anything is added."""
        if self.count:
            raise RuntimeError("the seen filter is renamed after fingerprints were added to it")
        if self.on:
            self._jvm().drop(name)
        self.name = name

    def _jvm(self):
        # (Held: finding a class through Py4J's package views costs a round trip a name part.)
        if self._class is None:
            self._class = self.spark._jvm.sse.SeenSet
        return self._class

    def add(self, fps: pa.Table) -> None:
        """Add the fingerprints ``fps`` (columns ``_fp``, ``_fp2``) to the JVM's set."""
        if not self.on or not self.stored or fps.num_rows == 0:
            return
        if fps.num_rows <= self.settings.seen_filter_call_max:  # a small level's: in the call itself
            if self._add_bytes is None:
                self._add_bytes = self._jvm().addBytes  # (Py4J looks a member up with a call of its own)
            self.count = int(self._add_bytes(self.name, bytearray(pairs_array(fps).tobytes())))
            return
        with pairs_file(self.folder, [fps]) as path:
            self.count = int(self._jvm().addFile(self.name, path))

    def open_level(self) -> None:
        """A fresh level for the next job's rows to claim their fingerprints in (``repeats``)."""
        if self.on and self.repeats:
            if self._level is None:
                self._level = self._jvm().level
            self._level(self.name, True)

    def forget_stored(self) -> None:
        """Forget the stored fingerprints (the driver no longer keeps them: settings.driver_seen_max), and
        keep blanking repeats within a level where ``repeats``: a level's set holds only its own
        fingerprints, and a large level's successors are mostly repeats of each other."""
        if not self.repeats:
            self.stop()
            return
        self.stored = False
        self.count = 0
        try:
            self._jvm().forgetStored(self.name)
        except Exception:  # the session may be gone
            pass

    def stop(self) -> None:
        """Forget the set: from now on nothing is filtered (the expression is false for it)."""
        if self.on:
            try:
                self._jvm().drop(self.name)
            except Exception:  # the session may be gone
                pass
        self.on = self.repeats = self.stored = False
        self.count = 0

    def mark(self, df: DataFrame) -> DataFrame:
        """``df`` (with ``_fp``, ``_fp2``) and ``_seen``, whether the JVM's set holds its fingerprint."""
        if not self.on:
            return df
        key = ", _key" if self.repeats and "_key" in df.columns else ""
        return df.selectExpr("*", f"sse_seen('{self.name}', _fp, _fp2{key}) AS {SEEN}")

    def blank(self, df: DataFrame, columns: list[str]) -> DataFrame:
        """``df`` (marked) with its ``columns`` NULL where ``_seen``."""
        if SEEN not in df.columns:
            return df
        blank = set(columns)
        return df.selectExpr(*[f"IF({SEEN}, NULL, `{c}`) AS `{c}`" if c in blank else f"`{c}`" for c in df.columns])

    @staticmethod
    def holders(keys: pa.Table, picked: pa.Table) -> pa.Array:
        """For each row of ``picked`` (``_fp``, ``_fp2``, in its order), the position in ``keys``
        (``_fp``, ``_fp2``, ``SEEN``, a row a position) of the row that kept its state's columns."""
        kept = pc.invert(keys[SEEN])
        rows = pa.table({"_fp": keys["_fp"].filter(kept), "_fp2": keys["_fp2"].filter(kept),
                         "_h": pc.indices_nonzero(kept).cast(pa.int64())})
        # (Two rows keep a state's columns only when they are one successor: same parent, action, key.)
        one = rows.group_by(["_fp", "_fp2"], use_threads=False).aggregate([("_h", "min")])
        rows = pa.table({"_fp": one["_fp"], "_fp2": one["_fp2"], "_h": one["_h_min"]})
        probe = pa.table({"_fp": picked["_fp"], "_fp2": picked["_fp2"], "_p": arrow_level.positions(picked.num_rows)})
        found = probe.join(rows, ["_fp", "_fp2"], join_type="inner", use_threads=False)
        if found.num_rows != picked.num_rows:  # (one row a state kept its columns, or none was blanked)
            raise SeenFilter.out_of_step()
        return found["_h"].take(pc.sort_indices(found["_p"])).combine_chunks()

    @staticmethod
    def with_holders(succ: pa.Table, rows: pa.Array) -> pa.Table:
        """The rows ``rows`` of ``succ`` (the first of each new state in TLC's order): their path
        columns (``PATH``) as they are, every other column from the row of the same state that kept
        them (``holders``)."""
        if SEEN not in succ.column_names or len(rows) == 0:
            return succ.take(rows)
        # Each column taken once: the path's from the picked rows, the rest (the state's, nested and
        # kilobytes for bookkeeper) from the holders, not every column twice.
        picked = succ.select(["_fp", "_fp2", *[c for c in succ.column_names if c in PATH]]).take(rows)
        holders = SeenFilter.holders(succ.select(["_fp", "_fp2", SEEN]), picked)
        kept = succ.select([c for c in succ.column_names if c not in PATH]).take(holders)
        return pa.table({c: picked[c] if c in PATH else kept[c] for c in succ.column_names})

    @staticmethod
    def check(new: pa.Table) -> pa.Table:
        """``new`` (the states the driver found unseen) without ``_seen``; raises when one of them is
        in the JVM's set."""
        if SEEN not in new.column_names:
            return new
        if new.num_rows and pc.any(new[SEEN]).as_py():
            raise SeenFilter.out_of_step()
        return new.drop_columns([SEEN])

    @staticmethod
    def out_of_step() -> RuntimeError:
        return RuntimeError("the JVM's seen set holds a state the driver found new: its rows were blanked "
                            "(run with SSE_SEEN_FILTER=0 and report it)")
