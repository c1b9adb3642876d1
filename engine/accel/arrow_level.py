"""A small level's de-duplication, anti-join and ordering on the driver, over Arrow tables.

A level of a few thousand states costs Spark far more than its rows: planning, scheduling and the
shuffles of a group-by and an anti-join over a handful of rows. When a level's successors are
expected to fit in the setting ``arrow_level_bytes``, the search runs the actions' SQL on Spark in one
job (fingerprints included), collects the successors as Arrow, and does the rest here with Arrow's
own relational operators (``pyarrow.compute`` sorts, Acero's hash group-by and anti-join): the same
first-per-state rule and TLC order as the Spark stages in ``engine.search.loop``.

The anti-join's other side is the driver's copy of the seen states' fingerprint columns, read from
the states table and grown by each committed level: what a broadcast hash join would build, kept
across levels instead of rebuilt by a Spark job each time. It is held only while the run has fewer
than ``driver_seen_max`` states (a setting; 16 bytes each, 64 MB at the default); past that the
driver lets it go and small levels are anti-joined against Spark's seen index, so the driver's
memory stays flat.
"""
from __future__ import annotations

from typing import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads

__all__ = ["KEYS", "TLC_ORDER", "SeenFingerprints", "first_per_state", "in_tlc_order", "positions",
           "table_bytes"]

KEYS = ["_fp", "_fp2"]
KEYS_SCHEMA = pa.schema([("_fp", pa.int64()), ("_fp2", pa.int64())])
# TLC meets a level's states in parent order, then action and witness (``_key``); ties on the
# fingerprint make the order total, as the Spark stages' sort does.
TLC_ORDER = [("_key", "ascending"), ("_fp", "ascending"), ("_fp2", "ascending")]


def table_bytes(table: pa.Table) -> int:
    """The size of ``table``'s buffers. (Not ``Table.nbytes``: pyarrow 26 crashes with a
    segmentation fault there, in ``ReferencedBufferSize``, on a nested list of strings as Spark
    sends bookkeeper v4.13's initial state.)"""
    return table.get_total_buffer_size()


def positions(n: int) -> pa.Array:
    return pa.array(np.arange(n, dtype=np.int64))


def in_tlc_order(states: pa.Table) -> pa.Table:
    return states.take(pc.sort_indices(states, sort_keys=TLC_ORDER))


def first_per_state(successors: pa.Table) -> pa.Table:
    """One row per fingerprint, the first TLC meets (smallest ``_key``), in TLC's order."""
    # Sorted and grouped on the narrow columns; the whole rows (nested, kilobytes for bookkeeper)
    # are taken once.
    order = pc.sort_indices(successors.select(["_key", *KEYS]), sort_keys=TLC_ORDER)
    pos = pa.table({"_fp": successors["_fp"].take(order), "_fp2": successors["_fp2"].take(order),
                    "_i": positions(successors.num_rows)})
    firsts = pos.group_by(KEYS, use_threads=False).aggregate([("_i", "min")]).column("_i_min")
    return successors.take(order.take(pa.array(np.sort(firsts.to_numpy()))))


class SeenFingerprints:
    """The fingerprints of the stored states, one Arrow table per committed level."""

    def __init__(self) -> None:
        self._parts: list[pa.Table] = []
        self.count = 0

    @classmethod
    def from_files(cls, files: Iterable[str], schema: pa.Schema) -> "SeenFingerprints":
        seen = cls()
        files = list(files)
        if files:
            seen.add(pads.dataset(files, format="parquet", schema=schema).to_table(columns=KEYS))
        return seen

    def add(self, states: pa.Table) -> None:
        fps = pa.table([states["_fp"], states["_fp2"]], schema=KEYS_SCHEMA)
        self._parts.append(fps)
        self.count += fps.num_rows

    def tables(self) -> list[pa.Table]:
        """The fingerprints (``_fp``, ``_fp2``), a table per part."""
        return list(self._parts)

    def unseen(self, states: pa.Table) -> pa.Table:
        """The rows of ``states`` whose fingerprint is not stored, in their order."""
        if not self._parts or states.num_rows == 0:
            return states
        probe = pa.table({"_fp": states["_fp"], "_fp2": states["_fp2"], "_i": positions(states.num_rows)})
        # Acero builds its hash table on the right side: the level's states, not the seen table.
        kept = pa.concat_tables(self._parts).join(probe, KEYS, join_type="right anti", use_threads=False)
        return states.take(np.sort(kept.column("_i").to_numpy()))
