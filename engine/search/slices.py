"""A sliced level's progress (settings.slice_successors): which of its slices are written, with their
figures, so that a run killed within a long level resumes at the slice after the last one written,
not at the level's start.

The level's folder (``RunStore.level_dir``) holds a folder per written slice and ``_slices.json``,
which lists them with the level's bounds. A slice's folder is listed only after its files are all
written (the file is replaced atomically), so a folder that is not listed is a slice killed while it
wrote, and is removed on resume. Nothing of the level is in the states table until the level's one
commit, after its last slice: a reader of the table never sees part of a level.
"""
from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pyarrow.parquet as pq
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from engine.errors import WarehouseError
from engine.store.runs import LevelFigures, RunStore, recent_fanout, sum_counts

__all__ = ["ALIGNED_OVER", "SliceProgress", "SliceRecord", "PROGRESS_FILE", "bounds_from_files", "count_slices",
           "files_by_slice"]

PROGRESS_FILE = "_slices.json"
VERSION = 1
# The next level's fan-out is estimated from the last level's, which it may exceed a little as the
# search goes deeper.
FANOUT_MARGIN = 1.2
# A level written in slices is cut along its slices' files while each cut is at most this many times
# an even share: the other way, a split copy of the level, writes every state of it again (for a
# level of millions of nested states, a tenth of the next level's time), where a larger slice only
# raises the level's disk peak by as much.
ALIGNED_OVER = 2.0


def count_slices(n_frontier: int, figs: list[LevelFigures], most: int, actions: int) -> int:
    """How many slices level ``n_frontier``'s expansion takes, for at most about ``most`` successors
    each (settings.slice_successors; 0: never sliced), from the last level's fan-out (else one
    successor an action)."""
    if most <= 0:
        return 1
    fanout = recent_fanout(figs)
    expected = n_frontier * (fanout * FANOUT_MARGIN if fanout is not None else actions)
    return max(1, -(-int(expected) // most))


def _ord_range(path: str) -> tuple[int, int, int] | None:
    """A Parquet file's least and greatest ``_ord`` and its rows, from its footer; None without them."""
    meta = pq.read_metadata(path)
    if meta.num_rows == 0:
        return 0, -1, 0
    lo = hi = None
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        col = next((group.column(c) for c in range(group.num_columns) if group.column(c).path_in_schema == "_ord"),
                   None)
        stats = col.statistics if col is not None else None
        if stats is None or not stats.has_min_max:
            return None
        lo = stats.min if lo is None else min(lo, stats.min)
        hi = stats.max if hi is None else max(hi, stats.max)
    return int(lo), int(hi), meta.num_rows


def _ranges(files: Sequence[str]) -> list[tuple[str, int, int, int]] | None:
    """Each file with rows, with its least and greatest ``_ord`` and its rows; None when a file has no
    statistics for ``_ord``."""
    ranges = []
    for f in files:
        r = _ord_range(f)
        if r is None:
            return None
        if r[2]:
            ranges.append((f, *r))
    return ranges


def files_by_slice(files: Sequence[str], bounds: list[int]) -> list[list[str]] | None:
    """For each slice of a level cut at ``bounds`` (``SliceProgress.bounds``), the level's stored
    ``files`` whose range of ``_ord`` meets the slice's (their footers say): a slice reads its own
    files, and the level needs no split copy. None where a file meets two slices (it would be read
    twice) or has no statistics."""
    ranges = _ranges(files)
    if ranges is None:
        return None
    edges = [None, *bounds, None]
    groups: list[list[str]] = []
    for i in range(len(bounds) + 1):
        lo, hi = edges[i], edges[i + 1]
        groups.append([f for f, a, b, _ in ranges if (lo is None or b >= lo) and (hi is None or a < hi)])
    return groups if sum(map(len, groups)) == len(ranges) else None


def bounds_from_files(files: Sequence[str], slices: int, most_over: float = 1.25,
                      block_over: float | None = None) -> list[int] | None:
    """Bounds that cut a level along its stored ``files``, none read by two slices, into slices of at
    most ``most_over`` times an even share of ``slices`` (a few more slices than ``slices`` where
    its blocks do not divide evenly): a level written in slices (or in ``_ord``'s order) has blocks
    of files whose ranges of ``_ord`` are disjoint, and consecutive blocks make a slice. A block
    larger than that is a slice of its own up to ``block_over`` times an even share (default
    ``most_over``). None where a block is larger still (a level Spark wrote whole is one block) or
    a file has no statistics."""
    ranges = _ranges(files)
    if not ranges:
        return None
    blocks: list[list[int]] = []  # [least _ord, greatest _ord, rows], disjoint, in order
    for _, a, b, n in sorted(ranges, key=lambda r: r[1]):
        if blocks and a <= blocks[-1][1]:
            blocks[-1][1] = max(blocks[-1][1], b)
            blocks[-1][2] += n
        else:
            blocks.append([a, b, n])
    share = sum(n for *_, n in blocks) / slices
    most = most_over * share
    if max(n for *_, n in blocks) > (most_over if block_over is None else block_over) * share:
        return None
    bounds, rows = [], 0
    for a, _, n in blocks:
        if rows and rows + n > most:  # (a slice holds at most ``most`` rows; a few more slices than asked may be cut)
            bounds.append(a)
            rows = 0
        rows += n
    return bounds


@dataclass
class SliceRecord:
    """One written slice: its index (from 0), its folder (relative to the level's; None when it had no
    new state within the constraint) and its figures."""
    i: int
    folder: str | None
    parents: int
    generated: int
    new: int
    out: int
    actions: dict[str, int] = field(default_factory=dict)


class SliceProgress:
    """The progress of level ``depth + 1``, expanded in slices of level ``depth`` cut at ``bounds``
    (the ascending lower bounds of ``_ord`` of every slice but the first)."""

    def __init__(self, store: RunStore, depth: int, bounds: list[int], done: list[SliceRecord] | None = None):
        self.store, self.depth, self.bounds = store, depth, list(bounds)
        self.done: list[SliceRecord] = list(done or [])
        self.level_dir = store.level_dir(depth + 1)
        self.path = self.level_dir / PROGRESS_FILE

    # --- starting and resuming ------------------------------------------------------------------
    @classmethod
    def start(cls, store: RunStore, depth: int, bounds: list[int]) -> "SliceProgress":
        """A new sliced level: an earlier attempt's files removed, the bounds recorded."""
        progress = cls(store, depth, bounds)
        shutil.rmtree(progress.level_dir, ignore_errors=True)
        progress.level_dir.mkdir(parents=True)
        progress._save()
        return progress

    @classmethod
    def resume(cls, store: RunStore, depth: int) -> "SliceProgress | None":
        """The progress an earlier process recorded for level ``depth + 1``, its unlisted folders (a
        slice killed while it wrote) removed; None when there is none to resume."""
        path = store.level_dir(depth + 1) / PROGRESS_FILE
        try:
            doc = json.loads(path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise WarehouseError(f"{path}: unreadable ({exc}); remove the file to compute the level "
                                 "again from its first slice") from None
        if doc.get("version") != VERSION or doc.get("depth") != depth:
            raise WarehouseError(f"{path}: the progress of another level or engine version "
                                 f"(version {doc.get('version')}, depth {doc.get('depth')}; expected "
                                 f"{VERSION}, {depth}); remove the file to compute the level again")
        progress = cls(store, depth, [int(b) for b in doc["bounds"]],
                       [SliceRecord(**r) for r in doc["done"]])
        listed = {r.folder for r in progress.done if r.folder}
        missing = [f for f in listed if not (progress.level_dir / f).is_dir()]
        if missing:
            raise WarehouseError(f"{path}: lists the slice folder {progress.level_dir / missing[0]}, which is "
                                 "missing; remove the file to compute the level again from its first slice")
        for entry in progress.level_dir.iterdir():
            if entry.name != PROGRESS_FILE and entry.name not in listed:
                shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
        return progress

    # --- a slice ---------------------------------------------------------------------------------
    @property
    def slices(self) -> int:
        return len(self.bounds) + 1

    @property
    def next_slice(self) -> int:
        return self.done[-1].i + 1 if self.done else 0

    def range(self, i: int) -> tuple[int | None, int | None]:
        """Slice ``i``'s range of ``_ord``: [lo, hi), None where it is open."""
        edges = [None, *self.bounds, None]
        return edges[i], edges[i + 1]

    def within(self, rows: DataFrame, i: int) -> DataFrame:
        """The ``rows`` (with ``_ord``) of slice ``i``'s range."""
        lo, hi = self.range(i)
        if lo is not None:
            rows = rows.where(F.col("_ord") >= F.lit(lo))
        if hi is not None:
            rows = rows.where(F.col("_ord") < F.lit(hi))
        return rows

    def new_folder(self, i: int) -> Path:
        """A folder of its own for one attempt at writing slice ``i``."""
        return self.level_dir / f"slice-{i:04d}-{uuid.uuid4().hex[:12]}"

    def record(self, record: SliceRecord, listed: bool = True) -> None:
        """Slice ``record.i`` is written: listed, with its figures (the file replaced atomically). A
        slice that ends the level (a violation) is not ``listed``, only kept for the level's commit:
        a run killed before that commit computes the slice again, and meets the violation again."""
        if record.i != self.next_slice:
            raise RuntimeError(f"slice {record.i} recorded after slice {self.next_slice - 1}: report it")
        self.done.append(record)
        if listed:
            self._save()

    # --- the level so far --------------------------------------------------------------------
    @property
    def generated(self) -> int:
        return sum(r.generated for r in self.done)

    @property
    def new(self) -> int:
        return sum(r.new for r in self.done)

    @property
    def out(self) -> int:
        return sum(r.out for r in self.done)

    @property
    def numbered(self) -> int:
        """The ``_ord`` the next slice's first new state gets (the slices before number every row they
        keep, within the constraint or not)."""
        return self.new + self.out

    def actions(self, names: list[str]) -> dict[str, int]:
        """The written slices' per-action counts, every action of ``names`` named."""
        return {**dict.fromkeys(names, 0), **sum_counts(r.actions for r in self.done)}

    def folders(self) -> list[Path]:
        """The written slices' folders that hold states, in order."""
        return [self.level_dir / r.folder for r in self.done if r.folder]

    def clear(self) -> None:
        """The level committed (or ended by a finding): its progress is not resumed again."""
        self.path.unlink(missing_ok=True)

    def _save(self) -> None:
        doc = {"version": VERSION, "depth": self.depth, "bounds": self.bounds,
               "done": [asdict(r) for r in self.done]}
        tmp = self.path.with_name(f".{PROGRESS_FILE}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(doc, indent=1, sort_keys=True))
        os.replace(tmp, self.path)
