"""The run's Delta tables. Spark writes each level's Parquet files into the ``states`` table folder;
the driver commits them with delta-rs, one commit per level, made idempotent by an application
transaction (run id, depth). Readers see a real Delta table (delta-rs, Polars, DuckDB, Databricks).

Layout: ``<warehouse>/<model>/<run_id>/{states,levels,outcome,trace}`` plus ``run.json``; a run that
keeps the state graph's edges (for liveness properties) has ``edges`` too, committed per level like
``states``, and ``liveness``, the properties checked over them.
"""
from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import socket
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq
from deltalake import DeltaTable, write_deltalake
from deltalake.transaction import AddAction, CommitProperties, Transaction
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from engine.errors import RunLockedError, WarehouseError
from engine.model.loader import default_models_root
from engine.settings import Settings

__all__ = ["EDGES_SCHEMA", "ENGINE_COLUMNS", "LIVENESS_SCHEMA", "RunStore", "check_warehouse", "states_spark_schema"]


def depth_stats(meta: pq.FileMetaData) -> dict[str, Any]:
    """The Delta statistics of a states file's ``_depth`` (from its Parquet footer): a reader that
    asks for one level (the next frontier) skips the other levels' files unopened."""
    # (a row group's columns are the schema's leaves, nested fields' included)
    at = next((i for i in range(len(meta.schema)) if meta.schema.column(i).path == "_depth"), None)
    lows, highs = [], []
    for i in range(meta.num_row_groups):
        st = meta.row_group(i).column(at).statistics if at is not None else None
        if st is None or not st.has_min_max or st.null_count:
            return {}
        lows.append(st.min)
        highs.append(st.max)
    if not lows:
        return {}
    return {"minValues": {"_depth": min(lows)}, "maxValues": {"_depth": max(highs)}, "nullCount": {"_depth": 0}}


ENGINE_COLUMNS = [
    StructField("_fp", LongType()),
    StructField("_fp2", LongType()),
    StructField("_depth", IntegerType()),
    StructField("_ord", LongType()),
    StructField("_parent_fp", LongType()),
    StructField("_parent_fp2", LongType()),
    StructField("_action", StringType()),
]

LEVELS_SCHEMA = pa.schema([
    ("run_id", pa.string()), ("depth", pa.int32()), ("generated", pa.int64()),
    ("new_states", pa.int64()), ("out_of_constraint", pa.int64()),
    ("distinct_total", pa.int64()), ("generated_total", pa.int64()),
    ("seconds", pa.float64()), ("committed_at", pa.string()),
])
# One row per edge of the state graph: from a state of the level before to a state of the constraint,
# by an action (a successor equal to its parent is a stuttering step, kept: it is an edge too).
EDGES_SCHEMA = pa.schema([
    ("_from_fp", pa.int64()), ("_from_fp2", pa.int64()), ("_to_fp", pa.int64()), ("_to_fp2", pa.int64()),
    ("_action", pa.string()),
])
# One row per property check over a finished run's tables (engine.search.liveness), keyed by the
# property's digest (its file, form and fairness, and the engine's version).
LIVENESS_SCHEMA = pa.schema([
    ("run_id", pa.string()), ("property", pa.string()), ("digest", pa.string()), ("form", pa.string()),
    ("fairness", pa.string()), ("holds", pa.bool_()), ("bad_states", pa.int64()), ("trace", pa.string()),
    ("loop", pa.int32()), ("loop_action", pa.string()), ("seconds", pa.float64()), ("finished_at", pa.string()),
])
OUTCOME_SCHEMA = pa.schema([
    ("run_id", pa.string()), ("model", pa.string()), ("config", pa.string()),
    ("constants", pa.string()), ("invariants", pa.string()), ("deadlock_check", pa.bool_()),
    ("result", pa.string()), ("violated_invariant", pa.string()),
    ("distinct_states", pa.int64()), ("states_generated", pa.int64()), ("depth", pa.int32()),
    ("trace_length", pa.int32()), ("trace", pa.string()), ("seconds", pa.float64()),
    ("fingerprint", pa.string()), ("finished_at", pa.string()),
    ("actions_generated", pa.string()),
])


def states_spark_schema(state: StructType) -> StructType:
    return StructType([*state.fields, *ENGINE_COLUMNS])


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def default_warehouse(settings: Settings | None = None) -> Path:
    """Where runs go unless told: the setting ``warehouse`` (SSE_WAREHOUSE), else ``warehouse/`` beside
    the models."""
    if settings is not None and settings.warehouse is not None:
        return Path(settings.warehouse)
    return default_models_root(settings) / "warehouse"


def check_warehouse(path: Path) -> Path:
    """Fail early, before anything is written, if the warehouse cannot hold tables."""
    path = Path(path).resolve()
    probe_dir = path
    while not probe_dir.exists():
        probe_dir = probe_dir.parent
    if not probe_dir.is_dir():
        raise WarehouseError(f"warehouse {path}: {probe_dir} is not a directory")
    if not os.access(probe_dir, os.W_OK | os.X_OK):
        raise WarehouseError(f"warehouse {path}: {probe_dir} is not writable")
    if path.exists():
        probe = path / f".write-probe-{os.getpid()}"
        try:
            probe.write_text("")
            probe.unlink()
        except OSError as exc:
            raise WarehouseError(f"warehouse {path} is not writable: {exc.strerror}") from None
    return path


@dataclass
class LevelFigures:
    depth: int
    generated: int
    new_states: int
    out_of_constraint: int
    distinct_total: int
    generated_total: int
    seconds: float
    finding: str | None = None
    # action -> successors it generated at this level, duplicates included (TLC's coverage "found")
    actions: dict[str, int] = field(default_factory=dict)


def largest_fanout(figs: Iterable[LevelFigures]) -> float | None:
    """The most successors a state of one level generated, on average, over the levels ``figs`` (in
    order): a level's generated count over the level before's new states. None without two levels."""
    figs = list(figs)
    return max((b.generated / a.new_states for a, b in zip(figs, figs[1:])
                if a.new_states and b.depth == a.depth + 1), default=None)


def recent_fanout(figs: Iterable[LevelFigures]) -> float | None:
    """The successors a state of the last level generated, on average (the last level's generated
    count over the level before's new states): the estimate of the next level's, where a level's size
    is planned (sliced levels). Early small levels have larger ratios than the levels a search spends
    its time in, so ``largest_fanout`` would cut a large level into more slices than it needs. None
    without two levels."""
    figs = list(figs)
    if len(figs) < 2 or not figs[-2].new_states or figs[-1].depth != figs[-2].depth + 1:
        return None
    return figs[-1].generated / figs[-2].new_states


def sum_counts(counts: Iterable[dict[str, int]]) -> dict[str, int]:
    """Add up per-action counts (levels' ``actions_generated``), keeping the order names first appear in."""
    total: dict[str, int] = {}
    for c in counts:
        for name, n in c.items():
            total[name] = total.get(name, 0) + int(n)
    return total


class RunStore:
    def __init__(self, warehouse: Path, model: str, run_id: str, state_schema: StructType,
                 settings: Settings | None = None):
        self.settings = settings or Settings()
        self.warehouse = Path(warehouse).resolve()
        self.root = self.warehouse / model / run_id
        self.run_id = run_id
        self.states_path = self.root / "states"
        self.levels_path = self.root / "levels"
        self.outcome_path = self.root / "outcome"
        self.trace_path = self.root / "trace"
        self.itf_path = self.root / "trace.itf.json"
        self.edges_path = self.root / "edges"
        self.liveness_path = self.root / "liveness"
        self.spark_schema = states_spark_schema(state_schema)
        self.arrow_schema = to_arrow_schema(self.spark_schema)
        self.state_columns = [f.name for f in state_schema.fields]
        self._lock_fd: int | None = None
        self._files: dict[int, list[str]] = {}
        # The states and levels tables, held open while the run holds its lock (no other writer), and
        # the depth each has committed: a commit then reads only the log entries it adds, not the
        # whole log again (which grows with every level).
        self._states: DeltaTable | None = None
        self._levels: DeltaTable | None = None
        self._committed = 0
        self._levels_committed = 0

    # --- lifecycle -------------------------------------------------------------------------
    @staticmethod
    def stored_spec(root: Path) -> dict[str, Any]:
        """What the run at ``root`` was started with (its run.json), or {} for a new run."""
        try:
            return json.loads((Path(root) / "run.json").read_text())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise WarehouseError(f"{Path(root) / 'run.json'}: unreadable ({exc}); start the run over with --fresh") from None

    def open(self, spec_json: dict[str, Any], edges: bool = False) -> None:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise WarehouseError(f"warehouse {self.warehouse}: cannot create {self.root}: {exc.strerror}") from None
        self._lock()
        run_json = self.root / "run.json"
        if not run_json.exists():
            run_json.write_text(json.dumps(spec_json, indent=2, sort_keys=True))
        if DeltaTable.is_deltatable(str(self.states_path)):
            self._check_states_table()
        else:
            if self.states_path.exists():
                shutil.rmtree(self.states_path)  # files of a run killed before its first commit
            # (statistics on _depth alone, which sits past the 32 leading columns a reader would
            # look at by default: the statistics depth_stats gives)
            DeltaTable.create(str(self.states_path), schema=self.arrow_schema, name="states",
                              description=f"reachable states of run {self.run_id}",
                              configuration={"delta.dataSkippingStatsColumns": "_depth"})
        self._states = DeltaTable(str(self.states_path))
        self._committed = self._states.transaction_version(self.run_id) or 0
        if edges and not DeltaTable.is_deltatable(str(self.edges_path)):
            if self.edges_path.exists():
                shutil.rmtree(self.edges_path)  # files of a run killed before its first edges commit
            DeltaTable.create(str(self.edges_path), schema=EDGES_SCHEMA, name="edges",
                              description=f"the state graph's edges of run {self.run_id}")
        if DeltaTable.is_deltatable(str(self.levels_path)):
            self._levels = DeltaTable(str(self.levels_path))
            self._levels_committed = self._levels.transaction_version(self.run_id) or 0
        self._load_files()

    def close(self) -> None:
        self._states = self._levels = None
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None
            try:
                (self.root / "_lock").unlink()
            except FileNotFoundError:
                pass

    def _lock(self) -> None:
        lock = self.root / "_lock"
        me = f"{socket.gethostname()}:{os.getpid()}"
        for _ in range(2):
            try:
                fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
                os.write(fd, me.encode())
                self._lock_fd = fd
                return
            except FileExistsError:
                holder = lock.read_text().strip() if lock.exists() else ""
                host, _, pid = holder.partition(":")
                if host == socket.gethostname() and pid.isdigit() and not _alive(int(pid)):
                    lock.unlink(missing_ok=True)  # left by a killed run
                    continue
                raise RunLockedError(f"run {self.run_id} is already running in {self.root} "
                                     f"(process {holder}); wait for it or stop it") from None
        raise RunLockedError(f"could not lock {lock}")

    def _check_states_table(self) -> None:
        try:
            dt = DeltaTable(str(self.states_path))
            have = pa.schema(dt.schema().to_arrow())
        except Exception as exc:  # delta-rs raises several types for a broken log
            raise WarehouseError(f"{self.states_path}: not a readable Delta table ({exc})") from None
        if have.names != self.arrow_schema.names:
            raise WarehouseError(f"{self.states_path}: its columns {have.names} are not this model's "
                                 f"{self.arrow_schema.names}; use another --warehouse or remove the folder")

    def _load_files(self) -> None:
        dt = DeltaTable(str(self.states_path))
        self._files = {}
        actions = pa.table(dt.get_add_actions(flatten=True))
        for path in actions.column("path").to_pylist():
            depth = int(path.split("/", 1)[0].split("-")[1])
            self._files.setdefault(depth, []).append(path)
        for v in self._files.values():
            v.sort()

    def missing_files(self) -> list[tuple[int, str]]:
        """The data files the states table's log lists that are not there, as (depth, path)."""
        return [(d, str(self.states_path / p)) for d in sorted(self._files) for p in self._files[d]
                if not (self.states_path / p).is_file()]

    def check_files(self) -> None:
        """Refuse to build on a states table that has lost data files (a resumed search would read an
        incomplete seen set and count states twice)."""
        missing = self.missing_files()
        if missing:
            depth, path = missing[0]
            raise WarehouseError(f"run {self.run_id}: its states table lists {path} (depth {depth}), which is missing"
                                 + (f", and {len(missing) - 1} more files" if len(missing) > 1 else "")
                                 + "; the run cannot be resumed on it: start it over with --fresh")

    # --- states ----------------------------------------------------------------------------
    def committed_depth(self) -> int:
        if self._states is not None:
            return self._committed
        return DeltaTable(str(self.states_path)).transaction_version(self.run_id) or 0

    def level_dir(self, depth: int) -> Path:
        return self.states_path / f"depth-{depth:06d}"

    def attempt_dir(self, depth: int) -> Path:
        """A new folder for one attempt at writing level ``depth`` (by Spark, on the portable path): a
        Spark job left running by a killed client may still write into its own attempt's folder,
        never into the one a later attempt commits."""
        return self.level_dir(depth) / f"attempt-{uuid.uuid4().hex}"

    def level_files(self, depth: int) -> list[str]:
        return [str(self.states_path / p) for p in self._files.get(depth, [])]

    def all_files(self, max_depth: int | None = None) -> list[str]:
        return [str(self.states_path / p) for d in sorted(self._files)
                if max_depth is None or d <= max_depth for p in self._files[d]]

    def write_level(self, depth: int, states: pa.Table) -> None:
        """Write a level held on the driver as the level's one Parquet file (what Spark's writer
        would put there), replacing the files of an earlier attempt at the level."""
        level = self.level_dir(depth)
        if level.exists():
            shutil.rmtree(level)
        level.mkdir(parents=True)
        pq.write_table(states.select(self.arrow_schema.names).cast(self.arrow_schema),
                       level / f"part-00000-{uuid.uuid4()}-c000.zstd.parquet", compression="zstd")

    def commit_level(self, fig: LevelFigures, folder: Path | list[Path] | None = None) -> None:
        """Commit the Parquet files written for ``fig.depth`` (in the level's folder, or in ``folder``, one
        attempt's inside it, or in each of a list of them: a sliced level's); a repeat is a no-op."""
        test_hook(self.settings, "before-commit", fig.depth)
        if self.committed_depth() >= fig.depth:
            self._load_files()
            return
        folders = ([Path(f) for f in folder] if isinstance(folder, list)
                   else [Path(folder) if folder is not None else self.level_dir(fig.depth)])
        files = [full for level in folders if level.exists() for full in sorted(level.glob("*.parquet"))]
        actions = []
        for full in files:
            meta = pq.read_metadata(full)
            if meta.num_rows == 0:
                continue
            self._check_file_schema(full, meta.schema.to_arrow_schema())
            st = full.stat()
            actions.append(AddAction(
                path=full.relative_to(self.states_path).as_posix(), size=st.st_size, partition_values={},
                modification_time=int(st.st_mtime * 1000), data_change=True,
                stats=json.dumps({"numRecords": meta.num_rows, **depth_stats(meta)}),
            ))
        meta = {"depth": str(fig.depth), "generated": str(fig.generated), "new_states": str(fig.new_states),
                "out_of_constraint": str(fig.out_of_constraint), "distinct_total": str(fig.distinct_total),
                "generated_total": str(fig.generated_total), "seconds": f"{fig.seconds:.3f}",
                "run_id": self.run_id, "finding": fig.finding or "",
                "actions_generated": json.dumps(fig.actions, sort_keys=True)}
        dt = self._states if self._states is not None else DeltaTable(str(self.states_path))
        dt.create_write_transaction(
            actions, mode="append", schema=self.arrow_schema,
            commit_properties=CommitProperties(custom_metadata=meta,
                                               app_transactions=[Transaction(self.run_id, fig.depth)]),
        )
        dt.update_incremental()  # the held table does not see its own commit otherwise
        self._committed = fig.depth
        self._files[fig.depth] = sorted(a.path for a in actions)
        test_hook(self.settings, "after-commit", fig.depth)
        self._append_levels([fig])

    # --- edges ------------------------------------------------------------------------------
    def has_edges(self) -> bool:
        return DeltaTable.is_deltatable(str(self.edges_path))

    def edges_committed(self) -> int:
        """The last depth whose edges are committed (0: none)."""
        return DeltaTable(str(self.edges_path)).transaction_version(self.run_id) or 0

    def edges_attempt_dir(self, depth: int) -> Path:
        """A new folder for one attempt at writing the edges into level ``depth``'s states."""
        return self.edges_path / f"depth-{depth:06d}" / f"attempt-{uuid.uuid4().hex}"

    def write_edges(self, depth: int, edges: pa.Table) -> Path:
        """Edges held on the driver written as one Parquet file of a new attempt folder; the folder."""
        folder = self.edges_attempt_dir(depth)
        folder.mkdir(parents=True)
        if edges.num_rows:
            pq.write_table(edges.select(EDGES_SCHEMA.names).cast(EDGES_SCHEMA),
                           folder / f"part-00000-{uuid.uuid4()}-c000.zstd.parquet", compression="zstd")
        return folder

    def commit_edges(self, depth: int, folder: Path) -> int:
        """Commit the edges written in ``folder`` (those into level ``depth``'s states) as one commit of
        the edges table, made idempotent by the run's transaction (run id, depth): a level computed again
        after a crash commits nothing twice. Called before the level's states are committed, so a run
        resumed from its states finds every committed level's edges. The rows committed."""
        dt = DeltaTable(str(self.edges_path))
        if (dt.transaction_version(self.run_id) or 0) >= depth:
            return 0
        actions, rows = [], 0
        for full in sorted(Path(folder).glob("*.parquet")):
            meta = pq.read_metadata(full)
            if meta.num_rows == 0:
                continue
            have = meta.schema.to_arrow_schema()
            if have.names != EDGES_SCHEMA.names:
                raise WarehouseError(f"{full}: columns {have.names} differ from the edges table's {EDGES_SCHEMA.names}")
            st = full.stat()
            rows += meta.num_rows
            actions.append(AddAction(
                path=full.relative_to(self.edges_path).as_posix(), size=st.st_size, partition_values={},
                modification_time=int(st.st_mtime * 1000), data_change=True,
                stats=json.dumps({"numRecords": meta.num_rows}),
            ))
        dt.create_write_transaction(
            actions, mode="append", schema=EDGES_SCHEMA,
            commit_properties=CommitProperties(custom_metadata={"depth": str(depth), "edges": str(rows),
                                                                "run_id": self.run_id},
                                               app_transactions=[Transaction(self.run_id, depth)]),
        )
        return rows

    def edges_size(self) -> tuple[int, int]:
        """(rows, bytes) of the edges table's current files."""
        dt = DeltaTable(str(self.edges_path))
        adds = pa.table(dt.get_add_actions(flatten=True))
        if adds.num_rows == 0:
            return 0, 0
        rows = sum(int(json.loads(x)["numRecords"]) if isinstance(x, str) else int(x or 0)
                   for x in (adds.column("num_records").to_pylist() if "num_records" in adds.column_names
                             else [None] * adds.num_rows))
        return rows, int(sum(adds.column("size_bytes").to_pylist()))

    # --- liveness results ----------------------------------------------------------------------
    def read_liveness(self, digest: str) -> dict[str, Any] | None:
        """The stored result of the property check with this digest, if any."""
        if not DeltaTable.is_deltatable(str(self.liveness_path)):
            return None
        rows = [r for r in DeltaTable(str(self.liveness_path)).to_pyarrow_table().to_pylist() if r["digest"] == digest]
        return rows[-1] if rows else None

    def write_liveness(self, row: dict[str, Any]) -> None:
        write_deltalake(str(self.liveness_path), pa.Table.from_pylist([{**row, "run_id": self.run_id,
                                                                       "finished_at": _now()}],
                                                                     schema=LIVENESS_SCHEMA),
                        mode="append", name="liveness")

    def _check_file_schema(self, path: Path, schema: pa.Schema) -> None:
        # delta-rs does not check appended files against the table schema; we do.
        if schema.names != self.arrow_schema.names:
            raise WarehouseError(f"{path}: columns {schema.names} differ from the table's {self.arrow_schema.names}")
        for got, want in zip(schema, self.arrow_schema):
            if not _types_match(got.type, want.type):
                raise WarehouseError(f"{path}: column {got.name} is {got.type}, the table has {want.type}")

    def level_figures(self) -> list[LevelFigures]:
        """Each committed level's figures, from the states table's commit metadata."""
        dt = DeltaTable(str(self.states_path))
        out = {}
        for c in dt.history():
            if c.get("run_id") == self.run_id and "depth" in c:
                d = int(c["depth"])
                out[d] = LevelFigures(d, int(c["generated"]), int(c["new_states"]), int(c["out_of_constraint"]),
                                      int(c["distinct_total"]), int(c["generated_total"]), float(c["seconds"]),
                                      c.get("finding") or None,
                                      json.loads(c.get("actions_generated") or "{}"))
        return [out[d] for d in sorted(out)]

    # --- levels, outcome, trace ------------------------------------------------------------
    def _append_levels(self, figs: list[LevelFigures]) -> None:
        if self._levels is None and DeltaTable.is_deltatable(str(self.levels_path)):
            self._levels = DeltaTable(str(self.levels_path))
            self._levels_committed = self._levels.transaction_version(self.run_id) or 0
        rows = [f for f in figs if f.depth > self._levels_committed]
        if not rows:
            return
        table = pa.Table.from_pylist([{
            "run_id": self.run_id, "depth": f.depth, "generated": f.generated, "new_states": f.new_states,
            "out_of_constraint": f.out_of_constraint, "distinct_total": f.distinct_total,
            "generated_total": f.generated_total, "seconds": f.seconds, "committed_at": _now(),
        } for f in rows], schema=LEVELS_SCHEMA)
        last = max(f.depth for f in rows)
        write_deltalake(self._levels if self._levels is not None else str(self.levels_path), table, mode="append",
                        name="levels", commit_properties=CommitProperties(app_transactions=[Transaction(self.run_id, last)]))
        if self._levels is None:
            self._levels = DeltaTable(str(self.levels_path))
        self._levels_committed = last

    def repair_levels(self) -> None:
        """After a kill between the states commit and the levels commit, add the missing rows."""
        self._append_levels(self.level_figures())

    def read_outcome(self) -> dict[str, Any] | None:
        if not DeltaTable.is_deltatable(str(self.outcome_path)):
            return None
        rows = DeltaTable(str(self.outcome_path)).to_pyarrow_table().to_pylist()
        return rows[-1] if rows else None

    def write_outcome(self, row: dict[str, Any], trace_rows: list[dict[str, Any]], trace_schema: pa.Schema) -> None:
        if trace_rows:
            write_deltalake(str(self.trace_path), pa.Table.from_pylist(trace_rows, schema=trace_schema),
                            mode="overwrite", name="trace")
        write_deltalake(str(self.outcome_path), pa.Table.from_pylist([row], schema=OUTCOME_SCHEMA),
                        mode="overwrite", schema_mode="overwrite", name="outcome")

    def tables(self) -> dict[str, str]:
        out = {"states": str(self.states_path), "levels": str(self.levels_path), "outcome": str(self.outcome_path)}
        if DeltaTable.is_deltatable(str(self.trace_path)):
            out["trace"] = str(self.trace_path)
        if self.itf_path.is_file():
            out["itf"] = str(self.itf_path)
        if self.has_edges():
            out["edges"] = str(self.edges_path)
        if DeltaTable.is_deltatable(str(self.liveness_path)):
            out["liveness"] = str(self.liveness_path)
        return out

    # --- reading states back on the driver (traces) ------------------------------------------
    def find_state(self, depth: int, fp: int, fp2: int) -> dict[str, Any]:
        files = self.level_files(depth)
        ds = pads.dataset(files, format="parquet", schema=self.arrow_schema)
        tbl = ds.to_table(filter=(pads.field("_fp") == fp) & (pads.field("_fp2") == fp2))
        if tbl.num_rows != 1:
            raise WarehouseError(f"{self.states_path}: expected one state with fingerprint {fp}/{fp2} "
                                 f"at depth {depth}, found {tbl.num_rows}")
        return tbl.to_pylist()[0]

    def find_by_ord(self, depth: int, ord_: int) -> dict[str, Any]:
        """The state at position ``ord_`` (TLC's order) of level ``depth``."""
        ds = pads.dataset(self.level_files(depth), format="parquet", schema=self.arrow_schema)
        tbl = ds.to_table(filter=pads.field("_ord") == int(ord_))
        if tbl.num_rows != 1:
            raise WarehouseError(f"{self.states_path}: expected one state at depth {depth}, position {ord_}, "
                                 f"found {tbl.num_rows}")
        return tbl.to_pylist()[0]


def _types_match(a: pa.DataType, b: pa.DataType) -> bool:
    if pa.types.is_list(a) and pa.types.is_list(b):
        return _types_match(a.value_type, b.value_type)
    if pa.types.is_struct(a) and pa.types.is_struct(b):
        return [f.name for f in a] == [f.name for f in b] and all(
            _types_match(x.type, y.type) for x, y in zip(a, b))
    return a.equals(b)


def test_hook(settings: Settings, point: str, depth: int) -> None:
    """For the resume tests: the setting ``kill_at=POINT:DEPTH`` (SSE_KILL_AT) makes this process kill
    itself (SIGKILL, as a crash would) and ``hold_at=POINT:DEPTH`` (SSE_HOLD_AT) makes it wait there
    until it is killed. POINT is ``before-commit`` (the level's Parquet files are written, not
    committed), ``after-commit`` (the states commit is done, the levels table's row is not) or
    ``after-slice-I`` (slice I, from 0, of a sliced level is written and listed, the next not begun)."""
    here = f"{point}:{depth}"
    if settings.kill_at == here:
        os.kill(os.getpid(), signal.SIGKILL)
    if settings.hold_at == here:
        print(f"holding at {here} (SSE_HOLD_AT)", file=sys.stderr, flush=True)
        while True:
            time.sleep(1)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError as exc:
        return exc.errno == errno.EPERM
    return True
