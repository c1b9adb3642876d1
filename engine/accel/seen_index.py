"""The seen states' fingerprints, kept hash-partitioned and sorted for the level's anti-join.

A plain anti-join of a level against the stored states shuffles and sorts the whole seen table
every level once it is too large to broadcast: its cost per new state grows with the table. Above
``index_from`` (a setting) seen states the search keeps their fingerprints instead in a few fragments, each
hash-partitioned by fingerprint into the same partitions and sorted within them. A level's states
are shuffled into those partitions and sorted (the level is small next to the table), then
checked against each fragment in turn; the seen states are neither shuffled nor sorted again.
Each committed level becomes a fragment, and fragments are merged as they accumulate.

With the engine's JVM classes (``engine/runtime/jvm/SortedSeen.java``) a fragment holds each partition's
fingerprints as two sorted ``long`` arrays, and a level's states are found in them by galloping
search: a level of a handful of states costs a few binary searches a fragment, however many states
the run has (a merge past every row of every fragment, read back from cached blocks, would cost a
small level as much as a large one). Fragments merge without a shuffle; the newest two merge when
the newer holds at least half as many fingerprints as the older (each fingerprint is copied a few
times over a run), or when there are more than ``max_fragments``. When a partition's run would pass
``run_max`` fingerprints the index is partitioned anew, twice as finely. Without those classes, or
with the setting ``sorted_seen`` off, the fragments are local checkpoints of rows, merged by Spark's
sort-merge anti-joins (and merged into one, by a shuffle, past ``max_fragments``). Either way the
fragments are kept in memory, then on disk, and rebuilt from the stored levels when a run resumes.

In Spark's local mode the driver's JVM holds the fragments' blocks, and the driver hands it pairs it
holds instead of rows Spark reads back and shuffles (``takes_pairs``): the index is first made from
the driver's copy of the seen fingerprints; a committed level's fingerprints, which the driver has,
are held there (``hold``) until ``pending_max`` of them are made one fragment; and a level finished
on the driver is looked up (``unseen_table``) in the runs in this JVM, or by one job the pairs are
handed to for a level of more than ``here_max`` states, then in the held fingerprints. A small level
past millions of states then costs no Spark job for its anti-join and none to index itself.
"""
from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from functools import reduce
from pathlib import Path

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

import engine.accel.arrow_level as arrow_level

import engine.runtime.jvm_ext as jvm_ext
from engine.settings import Settings
from engine.accel.seen_filter import pairs_file
from engine.accel.spark import checkpoint, persistent_rdd_ids, unpersist_rdds

__all__ = ["SeenIndex", "plain_unseen"]

KEYS = ["_fp", "_fp2"]
# The index's limits are settings (engine.settings): index_from (below it the plain anti-join is
# cheaper: Spark broadcasts a small table, and a level pays no job to index itself); max_fragments;
# min_partitions (a level's probe is a task a partition, a cheap one); run_max (the most
# fingerprints a partition's run holds, 16 bytes each, before the index is partitioned anew, twice as
# finely); pending_max (committed levels' fingerprints the driver holds, local mode, before they are
# made a fragment: a small level then costs no job to index itself); here_max (a level of at most
# this many states on the driver is looked up in the runs in this JVM, not by a job).
_ADAPTIVE = "spark.sql.adaptive.enabled"


def plain_unseen(states: DataFrame, seen: DataFrame) -> DataFrame:
    """The rows of ``states`` whose fingerprint is not in ``seen`` (below ``index_from`` seen states)."""
    return states.join(seen, on=KEYS, how="left_anti")


class SeenIndex:
    def __init__(self, spark: SparkSession, partitions: int, folder: Path | None = None,
                 settings: Settings | None = None):
        self.spark = spark
        self.settings = settings = settings or Settings()
        self.folder = folder  # where the pairs handed to the JVM are written (None: the temporary folder)
        # Sorted runs (engine/runtime/jvm/SortedSeen.java) where the engine's JVM classes are loaded.
        self.sorted = settings.sorted_seen and jvm_ext.use(spark, "SortedSeen", settings, "seen index",
                                                           "Spark's anti-join of the rows' fragments")
        self.partitions = max(partitions, settings.min_partitions) if self.sorted else partitions
        self.fragments: list = []        # DataFrames of rows, or (sorted) JVM RDDs of runs
        self.sizes: list[int] = []       # (sorted) the fingerprints each fragment holds
        self.largest_run = 0             # (sorted) the most fingerprints a partition's run holds
        self.rdd_ids: set[int] = set()   # the fragments' cached blocks, kept when a level releases its own
        # (sorted, local mode) committed levels' fingerprints on the driver, not yet in a fragment
        self.pending = arrow_level.SeenFingerprints()

    def _persisted(self) -> set[int]:
        return persistent_rdd_ids(self.spark)

    @contextmanager
    def _sorted(self, df: DataFrame):
        """``df`` hash-partitioned by fingerprint into the index's partitions and sorted within them,
        to be planned (and run) inside the block: adaptive execution would hide the partitioning."""
        conf = self.spark.conf
        adaptive = conf.get(_ADAPTIVE)
        conf.set(_ADAPTIVE, "false")
        try:
            yield df.repartition(self.partitions, *KEYS).sortWithinPartitions(*KEYS)
        finally:
            conf.set(_ADAPTIVE, adaptive)

    def _planned(self, df: DataFrame):
        """``_sorted(df)`` and the JVM RDD of its rows."""
        with self._sorted(df) as q:
            return q, q._jdf.queryExecution().toRdd()

    def _fragment(self, fps: DataFrame) -> DataFrame:
        # A local checkpoint keeps the plan's partitioning and order: joins against it neither
        # shuffle nor sort it again.
        before = self._persisted()
        with self._sorted(fps.select(*KEYS)) as q:
            frag = checkpoint(q)
        self.rdd_ids |= self._persisted() - before
        return frag

    def _unpersist(self, ids: set[int]) -> None:
        unpersist_rdds(self.spark, ids)

    def add(self, fps: DataFrame, expected: int = 0) -> None:
        """Index the fingerprints of more stored states (a committed level; or every stored level,
        ``expected`` of them, when the index is first made)."""
        if self.sorted:
            if not self.fragments:
                self._partitions_for(expected)
            q, rows = self._planned(fps.select(*KEYS))
            if rows.getNumPartitions():  # (Spark plans no partition for rows known to be none)
                self._add_runs(self._runs.pack(rows, 0, 1))
            return
        self.fragments.append(self._fragment(fps))
        if len(self.fragments) > self.settings.max_fragments:
            self._merge()

    @property
    def takes_pairs(self) -> bool:
        """Whether ``add_pairs`` can index fingerprints the driver holds: sorted runs, Spark's local mode."""
        return self.sorted and self.spark.sparkContext.master.startswith("local")

    def add_pairs(self, tables: list, folder: Path | None = None) -> bool:
        """Index the fingerprints of ``tables`` (Arrow tables of ``_fp``, ``_fp2``: the driver's copy
        of every stored state's, as it lets that copy go) as a fragment, partitioned and sorted in this
        JVM (``SortedSeen.fromFile``, through a file in ``folder``), where ``add`` reads the stored
        levels back and shuffles them. False, and nothing done, where it cannot (``takes_pairs``)."""
        if not self.takes_pairs:
            return False
        self._from_pairs(tables, folder)
        return True

    def _from_pairs(self, tables: list, folder: Path | None = None) -> None:
        total = sum(t.num_rows for t in tables)
        if not self.fragments:
            self._partitions_for(total)
        if total:
            with pairs_file(self._folder(folder), tables) as path:
                runs = self._runs.fromFile(self.spark.sparkContext._jsc, path, self.partitions)
            self._add_runs(runs)

    def _folder(self, folder: Path | None) -> Path:
        return folder or self.folder or Path(tempfile.gettempdir())

    def hold(self, fps: pa.Table) -> None:
        """Index a committed level's fingerprints ``fps`` (``_fp``, ``_fp2``; ``takes_pairs`` only):
        held on the driver, where ``unseen_table`` looks a level up in them, and made a fragment with
        those held before once they pass ``pending_max``, or before a level is looked up in Spark."""
        self.pending.add(fps)
        if self.pending.count >= self.settings.pending_max:
            self._flush()

    def _flush(self) -> None:
        if self.pending.count:
            held, self.pending = self.pending, arrow_level.SeenFingerprints()
            self._from_pairs(held.tables())

    def unseen_table(self, states: pa.Table) -> pa.Table:
        """The rows of ``states`` (a level on the driver, with ``_fp`` and ``_fp2``) whose fingerprint
        the index does not hold, in their order (``takes_pairs``, the index made): looked up in the
        fragments (``SortedSeen.unseenPairs``, no shuffle: up to ``here_max`` states in this JVM's copy of
        their runs, more by a job this JVM hands the pairs to in the fragments' partitions), then in
        the fingerprints held on the driver."""
        if states.num_rows:
            with pairs_file(self._folder(None), [states.select(KEYS)]) as path:
                got = self._runs.unseenPairs(self.spark.sparkContext._jsc, path, self._fragment_list(),
                                             states.num_rows <= self.settings.here_max)
            states = states.take(np.sort(np.frombuffer(got, dtype="<i4")))
        return self.pending.unseen(states)

    def _fragment_list(self):
        from py4j.java_collections import ListConverter
        return ListConverter().convert(self.fragments, self.spark.sparkContext._gateway._gateway_client)

    def _merge(self) -> None:
        old, old_ids = self.fragments, self.rdd_ids
        self.rdd_ids = set()
        self.fragments = [self._fragment(reduce(DataFrame.union, old))]
        self._unpersist(old_ids)

    # Sorted runs (engine/runtime/jvm/SortedSeen.java).

    @property
    def _runs(self):
        return self.spark._jvm.sse.SortedSeen

    def _measured(self, runs) -> int:
        """Materializes ``runs`` (a fragment) and returns its size; notes its largest run."""
        by_part = list(self._runs.sizes(runs))
        self.largest_run = max(self.largest_run, max(by_part, default=0))
        return sum(by_part)

    def _add_runs(self, runs) -> None:
        self.sizes.append(self._measured(runs))
        self.fragments.append(runs)
        self.rdd_ids.add(int(runs.id()))
        while len(self.fragments) >= 2 and (len(self.fragments) > self.settings.max_fragments
                                            or self.sizes[-2] <= 2 * self.sizes[-1]):
            a, b = self.fragments[-2], self.fragments[-1]
            merged = self._runs.merge(a, b)
            size = self._measured(merged)
            for old in (a, b):
                self.rdd_ids.discard(int(old.id()))
                old.unpersist(False)
            self.fragments[-2:], self.sizes[-2:] = [merged], [size]
            self.rdd_ids.add(int(merged.id()))
        # (A run past run_max by the hash's unevenness alone, the average still under half, is left.)
        run_max = self.settings.run_max
        if self.largest_run > run_max and sum(self.sizes) > self.partitions * run_max // 2:
            self._repartition()

    def _partitions_for(self, total: int) -> None:
        """Twice as many partitions, as often as needed for runs of half ``run_max`` on average."""
        while total > self.partitions * self.settings.run_max // 2:
            self.partitions *= 2

    def _repartition(self) -> None:
        """One fragment of all the fingerprints, in twice as many partitions (or more) as before."""
        from engine.accel.held import rows_frame
        from pyspark.sql.types import LongType, StructField, StructType
        schema = StructType([StructField(k, LongType(), False) for k in KEYS])
        self._partitions_for(sum(self.sizes))
        old = self.fragments
        every = reduce(DataFrame.union, [rows_frame(self.spark, self._runs.rows(f), schema) for f in old])
        runs = self._runs.pack(self._planned(every)[1], 0, 1)
        self.largest_run = 0
        size = self._measured(runs)
        for f in old:
            f.unpersist(False)
        self.fragments, self.sizes, self.rdd_ids = [runs], [size], {int(runs.id())}

    def unseen(self, states: DataFrame) -> DataFrame:
        """The rows of ``states`` whose fingerprint is in no fragment: the level is partitioned and
        sorted once (by Spark), then checked against each fragment in turn."""
        if self.sorted:
            from engine.accel.held import rows_frame
            self._flush()
            q, rows = self._planned(states)
            if not rows.getNumPartitions():  # no states (Spark plans no partition for them)
                return q
            out = self._runs.unseen(rows, q.columns.index("_fp"), q.columns.index("_fp2"), self._fragment_list())
            return rows_frame(self.spark, out, q.schema)
        # A join keeps a side's partitioning only if it has at least spark.sql.shuffle.partitions
        # partitions (the search raises that for large levels): then the fragments are re-partitioned.
        wanted = int(self.spark.conf.get("spark.sql.shuffle.partitions"))
        if wanted > self.partitions:
            self.partitions = wanted
            self._merge()
        out = states
        for frag in self.fragments:
            out = out.join(frag, on=KEYS, how="left_anti")
        return out

    def release(self) -> None:
        if self.sorted:
            for f in self.fragments:
                f.unpersist(False)
        else:
            self._unpersist(self.rdd_ids)
        self.fragments, self.sizes, self.rdd_ids, self.largest_run = [], [], set(), 0
        self.pending = arrow_level.SeenFingerprints()
