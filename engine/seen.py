"""The seen states' fingerprints, kept hash-partitioned and cached for the level's anti-join.

A plain anti-join of a level against the stored states shuffles and sorts the whole seen table
every level once it is too large to broadcast: its cost per new state grows with the table
(``pipelines/antijoin_scaling.py``: 10 to 14 times from 100 thousand to 10 million seen states). Above
``INDEX_FROM`` seen states the search keeps their fingerprints instead in a few cached fragments,
each hash-partitioned by fingerprint into the same partitions and sorted within them. A level's
states are shuffled into those partitions and sorted (the level is small next to the table), then
merged past each fragment in turn (sort-merge anti-joins that neither shuffle nor sort the seen
states). Each committed level becomes a fragment; past
``MAX_FRAGMENTS`` they are merged into one, so the plan stays short and each state is re-shuffled a
few times over a run. The fragments are local checkpoints (memory, then disk), rebuilt from the
stored levels when a run resumes.
"""
from __future__ import annotations

from functools import reduce

from pyspark.sql import DataFrame, SparkSession

from .session import checkpoint, persistent_rdd_ids, unpersist_rdds

__all__ = ["SeenIndex", "plain_unseen", "INDEX_FROM", "MAX_FRAGMENTS"]

KEYS = ["_fp", "_fp2"]
# Below this many seen states the plain anti-join is cheaper (Spark broadcasts a small table) and
# a level pays no job to index itself.
INDEX_FROM = 1_000_000
MAX_FRAGMENTS = 8


def plain_unseen(states: DataFrame, seen: DataFrame) -> DataFrame:
    """The rows of ``states`` whose fingerprint is not in ``seen`` (below INDEX_FROM seen states)."""
    return states.join(seen, on=KEYS, how="left_anti")


class SeenIndex:
    def __init__(self, spark: SparkSession, partitions: int):
        self.spark = spark
        self.partitions = partitions
        self.fragments: list[DataFrame] = []
        self.rdd_ids: set[int] = set()   # the fragments' cached blocks, kept when a level releases its own

    def _persisted(self) -> set[int]:
        return persistent_rdd_ids(self.spark)

    def _fragment(self, fps: DataFrame) -> DataFrame:
        # A local checkpoint keeps the plan's partitioning and order: joins against it neither
        # shuffle nor sort it again.
        # Adaptive execution would hide the partitioning from the checkpoint: planned without it.
        before = self._persisted()
        conf = self.spark.conf
        adaptive = conf.get("spark.sql.adaptive.enabled")
        conf.set("spark.sql.adaptive.enabled", "false")
        try:
            frag = checkpoint(fps.select(*KEYS).repartition(self.partitions, *KEYS).sortWithinPartitions(*KEYS))
        finally:
            conf.set("spark.sql.adaptive.enabled", adaptive)
        self.rdd_ids |= self._persisted() - before
        return frag

    def _unpersist(self, ids: set[int]) -> None:
        unpersist_rdds(self.spark, ids)

    def add(self, fps: DataFrame) -> None:
        """Index the fingerprints of more stored states (a committed level)."""
        self.fragments.append(self._fragment(fps))
        if len(self.fragments) > MAX_FRAGMENTS:
            self._merge()

    def _merge(self) -> None:
        old, old_ids = self.fragments, self.rdd_ids
        self.rdd_ids = set()
        self.fragments = [self._fragment(reduce(DataFrame.union, old))]
        self._unpersist(old_ids)

    def unseen(self, states: DataFrame) -> DataFrame:
        """The rows of ``states`` whose fingerprint is in no fragment: the level is partitioned and
        sorted once (by Spark), then merged past each fragment in turn."""
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
        self._unpersist(self.rdd_ids)
        self.fragments, self.rdd_ids = [], set()
