"""Stage: de-duplicate. One row per fingerprint within a level: the first in TLC's order (the
smallest ``_key``: the parent's position, then the action and the witness in the order Next names
them), since TLC keeps the first path by which it meets a state. The one place successors are
de-duplicated.

Only the narrow columns are grouped: each successor of a checkpoint is numbered ``_i`` (its
partition and place in it, the same each time the checkpoint is read), the first ``_i`` per
fingerprint is found from (fingerprint, key, row id), and the rows picked are fetched from the
checkpoint by a join on ``_i`` (on the portable path the checkpoint holds narrow columns alone, and
the rows picked are made whole by engine.search.expand.Refetch). Whole states (kilobytes each for
bookkeeper) are neither shuffled nor sorted."""
from __future__ import annotations

from typing import Callable

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from engine.runtime.session import kept_observed

__all__ = ["by_row_id", "first_keys", "first_per_state", "with_row_ids"]

KEYS = ["_fp", "_fp2"]
# Up to this many first rows a level's anti-join broadcasts their fingerprints (16 bytes each, about
# 50 a row in Spark's hash relation); beyond, both sides are shuffled.
PROBE_MAX = 2_000_000


def with_row_ids(checkpointed: DataFrame) -> DataFrame:
    """A checkpoint's rows numbered ``_i`` by partition and position: the same numbers each time it
    is read. (Numbered before the checkpoint, the non-deterministic id would keep Catalyst from
    pushing the fingerprint into each action's branch of the union: a copy of every row.)"""
    return checkpointed.withColumn("_i", F.monotonically_increasing_id())


def first_keys(rows: DataFrame) -> DataFrame:
    """One row per fingerprint of ``rows`` (numbered: ``with_row_ids``): its ``_fp``, ``_fp2``, and the
    ``_key`` and row id ``_i`` of its first row (the smallest ``_key``), from the narrow columns."""
    return (rows.groupBy(*KEYS).agg(F.min(F.struct("_key", "_i")).alias("_m"))
            .select("_fp", "_fp2", "_m._key", "_m._i"))


def by_row_id(rows: DataFrame, picked: DataFrame, how: str, broadcast: bool) -> DataFrame:
    """The rows of ``rows`` whose ``_i`` is in ``picked`` (with ``picked``'s columns for an inner
    join); ``broadcast``: ``picked`` is small enough to send to every task, so ``rows`` is read in
    place, not shuffled."""
    return rows.join(F.broadcast(picked) if broadcast else picked, "_i", how)


def first_per_state(successors: DataFrame, keep: Callable[[DataFrame], DataFrame], broadcast_rows: int,
                    drop: DataFrame | None = None,
                    fetch: Callable[[DataFrame, int], DataFrame] | None = None,
                    mark: Callable[[str], None] = lambda _: None) -> tuple[DataFrame, int]:
    """The first row of each state of ``successors`` (a checkpoint) whose fingerprint is not in
    ``drop`` (``_fp``, ``_fp2``: the states already seen), with the columns of ``successors``, and how
    many there are. ``keep`` checkpoints the narrow columns picked: their counts choose how ``drop``
    is joined (``PROBE_MAX``) and how the rows are fetched (a broadcast join up to ``broadcast_rows``).
    With ``fetch``, ``successors`` holds narrow columns alone, and the rows picked (kept) are passed
    to ``fetch`` with their count, for the whole rows (engine.search.expand.Refetch). ``mark`` is told
    as each step's jobs end (``firsts``, ``picked``, ``chosen``: the level's profile)."""
    rows = with_row_ids(successors)
    # (each checkpoint's rows counted by the job that keeps it)
    firsts, n_firsts = kept_observed(first_keys(rows).select(*KEYS, "_i"), keep, [F.count(F.lit(1)).alias("n")])
    mark("firsts")
    if drop is not None:
        if int(n_firsts()["n"]) <= PROBE_MAX:
            # The seen side is read in place and probed against the level's fingerprints, sent to
            # every task: a sort-merge anti-join would shuffle and sort every stored fingerprint,
            # each level, however few states the level has.
            hits = drop.join(F.broadcast(firsts.select(*KEYS)), on=KEYS, how="left_semi")
            firsts = firsts.join(F.broadcast(hits), on=KEYS, how="left_anti")
        else:
            firsts = firsts.join(drop, on=KEYS, how="left_anti")
    picked, counted = kept_observed(firsts.select("_i"), keep, [F.count(F.lit(1)).alias("n")])
    n_picked = int(counted()["n"])
    mark("picked")
    chosen = by_row_id(rows, picked, "left_semi", n_picked <= broadcast_rows).drop("_i")
    if fetch is not None:
        kept = keep(chosen)
        mark("chosen")
        return fetch(kept, n_picked), n_picked
    return chosen, n_picked
