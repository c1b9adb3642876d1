"""The seen fingerprints in the JVM that runs the actions' tasks, to send only new states' rows.

A level's successors are mostly states met before (ledger chaining: about five in six; bookkeeper
v4.13: three in four). Before, every successor's whole row was converted to Arrow and sent to the
driver, which then kept the new ones. In Spark's local mode the tasks run in the driver's JVM, so the
driver keeps a copy of the stored states' fingerprints there (``sse_seen``, engine/jvm/SeenSet.java,
TLC's fingerprint set), grown after each committed level, and the actions' job replaces the state,
constraint and invariant columns of a successor whose fingerprint is in it by NULL (``_seen`` says
which): its narrow columns (fingerprints, order key, parent, action) still count it as generated,
for the deadlock check and for TLC's order, and the driver's anti-join still decides what is new.
``check`` refuses a level whose new states have ``_seen`` set: that would be a fingerprint the driver
did not store, a wrong search rather than a slow one.

Off (the columns pass through) on a cluster (its executors are other JVMs), without the engine's
JVM functions, above ``arrow_level.DRIVER_SEEN_MAX`` stored states (the driver's memory stays
flat), and with ``SSE_SEEN_FILTER=0``.
"""
from __future__ import annotations

import os
import tempfile
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession

from . import jvm_ext

__all__ = ["SEEN", "SeenFilter"]

SEEN = "_seen"
# Up to this many fingerprints are sent to the JVM in the Py4J call (16 bytes each); more go
# through a file.
BYTES_MAX = 1 << 12


class SeenFilter:
    """The set of one run's stored fingerprints in the JVM, and the SQL that uses it."""

    def __init__(self, spark: SparkSession, folder: Path):
        self.spark, self.folder = spark, folder
        self.name = f"sse-{uuid.uuid4().hex}"
        self.on = (os.environ.get("SSE_SEEN_FILTER", "1") != "0"
                   and spark.sparkContext.master.startswith("local") and jvm_ext.has_class(spark, "SeenSet"))
        self.count = 0  # fingerprints in the JVM's set
        self._class = self._add_bytes = None

    def _jvm(self):
        # (Held: finding a class through Py4J's package views costs a round trip a name part.)
        if self._class is None:
            self._class = self.spark._jvm.sse.SeenSet
        return self._class

    def add(self, fps: pa.Table) -> None:
        """Add the fingerprints ``fps`` (columns ``_fp``, ``_fp2``) to the JVM's set."""
        if not self.on or fps.num_rows == 0:
            return
        pairs = np.empty((fps.num_rows, 2), dtype="<i8")
        pairs[:, 0] = fps["_fp"].to_numpy()
        pairs[:, 1] = fps["_fp2"].to_numpy()
        if fps.num_rows <= BYTES_MAX:  # a small level's: in the call itself
            if self._add_bytes is None:
                self._add_bytes = self._jvm().addBytes  # (Py4J looks a member up with a call of its own)
            self.count = int(self._add_bytes(self.name, bytearray(pairs.tobytes())))
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".seen-", suffix=".bin")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(pairs.tobytes())
            self.count = int(self._jvm().addFile(self.name, tmp))
        finally:
            os.unlink(tmp)

    def stop(self) -> None:
        """Forget the set: from now on nothing is filtered (the expression is false for it)."""
        if self.on:
            try:
                self._jvm().drop(self.name)
            except Exception:  # the session may be gone
                pass
        self.on = False
        self.count = 0

    def mark(self, df: DataFrame) -> DataFrame:
        """``df`` (with ``_fp``, ``_fp2``) and ``_seen``, whether the JVM's set holds its fingerprint."""
        return df.selectExpr("*", f"sse_seen('{self.name}', _fp, _fp2) AS {SEEN}") if self.on else df

    def blank(self, df: DataFrame, columns: list[str]) -> DataFrame:
        """``df`` (marked) with its ``columns`` NULL where ``_seen``."""
        if SEEN not in df.columns:
            return df
        blank = set(columns)
        return df.selectExpr(*[f"IF({SEEN}, NULL, `{c}`) AS `{c}`" if c in blank else f"`{c}`" for c in df.columns])

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
