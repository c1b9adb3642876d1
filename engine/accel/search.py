"""The local accelerator: the search's stages for classic local mode, where small levels are finished
on the driver as Arrow and the engine's JVM helpers do what public APIs cannot (fingerprints of a
state's bytes, the seen set in the tasks' JVM, a sorted seen index, the actions' union planned once a
run). Chosen by engine.search.loop.choose_path only where it can work. Where one of its hooks is
missing (a helper not loaded, a plan that cannot be held), the stage runs as on the portable path
(a JSON fingerprint, an anti-join against the stored levels, a plan made each level), and the run
says so: the figures are the same either way.
"""
from __future__ import annotations

import functools
import gc
import json
import shutil
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.parquet as pq
from py4j.protocol import Py4JError
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, LongType, StructField, StructType

import engine.accel.arrow_level as arrow_level
import engine.accel.seen_index as seen_index
import engine.runtime.jvm_ext as jvm_ext
import engine.search.dedupe as dedupe
from engine.accel.held import (HeldExpansion, HeldPlanUnavailable, HeldRows, nullable, partitions_of, rows_frame,
                               union_by_part)
from engine.accel.seen_filter import PATH, SEEN, SeenFilter
from engine.accel.spark import checkpoint, persistent_rdd_ids, unpersist_rdds
from engine.model.loader import RunSpec
from engine.runtime.session import _CODEGEN_CONFS, FACTORY_MODE, interpreted
from engine.search.commit import dense, within_model
from engine.search.control import StageTimer, cancelled, stop_requested
from engine.search.encoding import fingerprint_sql
from engine.search.expand import CompiledModel, slice_bounds, slice_line
from engine.search.invariants import InvariantSuite, guarded
from engine.search.slices import (ALIGNED_OVER, SliceProgress, SliceRecord, bounds_from_files, count_slices,
                                  files_by_slice)
from engine.search.symmetry import canonical_fingerprint_stages, check_paths
from engine.settings import Settings
from engine.store.runs import LevelFigures, RunStore, largest_fanout, test_hook

__all__ = ["AcceleratedSearch"]

# Small levels finished on the driver are validated together (settings.validate_batch) until they hold
# this many new states: a run of the suite has a fixed cost in Python whatever its rows.
VALIDATE_BATCH_ROWS = 10_000
# Initial states are collected to the driver when there are at most this many.
ARROW_INIT = 100_000
# A small level's frontier above this many bytes (as Arrow) is checkpointed in Spark rather than
# shipped inside each action's tasks.
LOCAL_FRONTIER_BYTES = 1 << 20
# A driver level's union planned for the level runs in this many tasks a core, each a group of whole
# actions: with one a core, one task can get the costlier actions while the other core waits.
EXPANSION_TASKS_PER_CORE = 2
# A level with at least this many successors reads them largest partition first (largest_first): a
# large level's jobs otherwise end with one task alone.
LARGEST_FIRST_FROM = 100_000
# A Spark level's frontier has a partition per core, or a multiple of that with at most this many
# states a partition.
PART_STATES = 250_000
# Up to this many frontier states, a level's successors are computed in one task per core.
SMALL_FRONTIER = 20_000


ProgressFn = Callable[[LevelFigures, int], None]


# Settings that name where a run writes or logs, not what its plans compute.
_NOT_IN_PLANS = {Settings.env_name(n) for n in ("warehouse", "server", "event_log", "profile")}


def _restore_conf(spark: SparkSession, key: str, value: str | None) -> None:
    """Give the session's setting ``key`` back its ``value`` (None: it was unset)."""
    if value is None:
        spark.conf.unset(key)
    else:
        spark.conf.set(key, value)


class AcceleratedSearch:
    def __init__(self, spark: SparkSession, spec: RunSpec, cm: CompiledModel, store: RunStore,
                 suite: InvariantSuite, progress: ProgressFn | None, settings: Settings):
        self.spark, self.spec, self.cm, self.store, self.suite = spark, spec, cm, store, suite
        self.settings = settings
        self.progress = progress
        self.vars = [f.name for f in cm.schema.fields]
        self.canonical_helper = False
        if spec.symmetry:
            # SYMMETRY: de-duplicate by the orbit's fingerprint; the row keeps the state as generated.
            check_paths(spec.model.schema_path, cm.schema, spec.model.symmetry_shapes)
            self.canonical_helper = _canonical_helper(spark, cm.schema, settings)
            self.fp_stages = canonical_fingerprint_stages(
                cm.schema, spec.model.symmetry_shapes, {s: spec.constants[s] for s in spec.model.symmetry},
                using=spec.fingerprint, literal_permutations=settings.literal_permutations,
                helper=self.canonical_helper)
        fp1, fp2 = fingerprint_sql([(f.name, f.dataType) for f in cm.schema.fields], using=spec.fingerprint)
        self.raw_fp_stages = [[f"{fp1} AS _fp", f"{fp2} AS _fp2"]]
        if not spec.symmetry:
            self.fp_stages = self.raw_fp_stages
        # With symmetry, a level's successors are first de-duplicated as generated (identical states
        # share an orbit), and only the survivors are canonicalized: exact repeats are common, and
        # cheaper to drop by the plain fingerprint. A terminal finding compares every successor's orbit with
        # its parent's, so a model with one canonicalizes them all.
        # With the JVM helper every successor is canonicalized in the actions' job, as without
        # symmetry: cheaper than the second pass (a checkpoint and a job) that de-duplicating first takes.
        self.dedupe_raw_first = spec.symmetry and not cm.terminal_exprs and not self.canonical_helper
        cons = [cm.constraint_exprs[c] for c in spec.constraints]
        self.in_model_expr = " AND ".join(cons) if cons else "true"
        self.table_cols = [f.name for f in store.spark_schema.fields]
        self._figs: list[LevelFigures] = []
        self._totals = (0, 0)
        self._last_new = 0
        self.timer = StageTimer(settings.profile)
        self._spark_before = False  # whether the level before ran Spark's stages
        self.base_partitions = int(spark.conf.get("spark.sql.shuffle.partitions"))
        self.index = seen_index.SeenIndex(spark, max(self.base_partitions, spark.sparkContext.defaultParallelism),
                                          store.root / "_frontier", settings)
        # terminal finding -> {"count", "state"}, over the levels this process expanded
        self.terminal: dict[str, dict[str, Any]] = {}
        # The largest successors-per-state ratio met so far and the bytes of a successor row as Arrow:
        # they predict whether a level's successors fit on the driver.
        self.fanout: float | None = None
        self.row_bytes: float | None = None
        # The seen states' fingerprints on the driver, for small levels (below settings.driver_seen_max
        # seen states).
        self.seen_fps: arrow_level.SeenFingerprints | None = None
        # That copy, kept from the moment the driver lets it go until the seen index is made from it
        # (SeenIndex.add_pairs) instead of from the stored levels.
        self.index_seed: arrow_level.SeenFingerprints | None = None
        # (depth, stored states) of the last level finished on the driver: the next level's frontier.
        self.held: tuple[int, pa.Table] | None = None
        # (depth, checkpointed new states, its RDD id) of the last level finished by Spark: the next
        # level's frontier without reading its Parquet files back and checkpointing them again.
        self.kept: tuple[int, DataFrame, int | None] | None = None
        # Small levels run the union planned once per run (settings.fixed_plan off: planned again each level).
        self.held_union: HeldExpansion | None = None
        fixed_plan = settings.fixed_plan
        binary = settings.frontier != "json" and HeldExpansion.binary_available(spark, settings)
        switch = jvm_ext.use(spark, "SwitchRows", settings, "the actions' plan",
                             "planned again for each Spark level, as on the portable path")
        if fixed_plan and HeldExpansion.supports(cm.schema, binary):
            # (Hadoop's listing hides names starting with _ or ., the folder read included.)
            finish = lambda union, annotate: self._finish_expansion(union, annotate, coalesce=False)  # noqa: E731
            # The small levels' union over the columns the Spark levels' held plan reads, planned the
            # same way (settings.shared_leaf): one copy of the actions' generated code a run.
            shared = self.settings.shared_leaf and binary and switch
            self.held_union = HeldExpansion(spark, cm, store.root / "_frontier" / "leaf", finish,
                                            f"sse_frontier_{abs(hash(store.root)):x}",
                                            spark.sparkContext.defaultParallelism, self._expansion_tasks(), binary,
                                            columns=self._kept_schema() if shared else None,
                                            union_over=self._union_over if shared else None, settings=settings,
                                            key=self._plan_key(binary, shared) if settings.keep_plans else None)
        # The stored fingerprints in the JVM too (local mode), grown with ``seen_fps``: the actions'
        # job blanks the rows of successors seen before (engine.search.seen_filter).
        self.seen_filter = SeenFilter(spark, store.root / "_frontier", settings)
        if self.held_union is not None:
            # An earlier run's plans test its seen filter's name: this run's set takes it (empty).
            kept = self.held_union.adopt()
            if kept is not None:
                self.seen_filter.rename(kept)
        # Spark levels over a kept frontier run the union planned once per run too (settings.hold_spark):
        # (parts, the frontier's schema, seen filter on) -> the held plan, None where it cannot be.
        self.held_rows: dict[tuple, HeldRows | None] = {}
        self._factory_mode: str | None = None  # the session's FACTORY_MODE (None: unset), once read
        self._factory_mode_read = False
        # Under symmetry Spark levels plan their union each level: bk_master_3b_sym's first Spark level
        # after a resumed one failed in its held plan (a coalesced RDD whose lineage a checkpoint had
        # cleared, read through SwitchRows), a failure not yet understood.
        self.hold_spark = self.settings.hold_spark and fixed_plan and not spec.symmetry and switch
        self.full_row_bytes: float | None = None  # a new state's bytes as Arrow, none blanked
        # The last level's write, validation and commit, running while the next level's actions run.
        self._persisting: Future | None = None
        # A level Spark finished, its write not yet submitted (settings.defer_write): ``_persist``'s arguments.
        self._deferred: tuple | None = None
        self._persister: ThreadPoolExecutor | None = None
        self._batch: list[tuple[LevelFigures, pa.Table, pa.Table]] = []  # validated together, not yet

    def close(self) -> None:
        self._settle(quiet=True)
        if self._persister is not None:
            self._persister.shutdown()
        self.index.release()
        self.index_seed = None
        name = self.seen_filter.name
        self.seen_filter.stop()
        if self.held_union is not None:
            self.held_union.close(park=name if self.settings.keep_plans else None)
        self.held_rows.clear()  # (their leaves name the last frontier: a server's JVM need not keep it)

    def _plan_key(self, binary: bool, shared: bool) -> str:
        """What the held union's plans depend on besides the frontier's files (``HeldExpansion.adopt``):
        the run's model, configuration and constants (its id), every setting, and the session's master."""
        sc = self.spark.sparkContext
        return json.dumps({"run": self.spec.run_id, "fingerprint": self.spec.fingerprint,
                           "settings": {k: v for k, v in self.settings.to_env().items() if k not in _NOT_IN_PLANS},
                           "master": sc.master,
                           "cores": sc.defaultParallelism, "binary": binary, "shared": shared,
                           "canonical_helper": self.canonical_helper, "schema": self.store.spark_schema.json()},
                          sort_keys=True)

    # ---- stages ---------------------------------------------------------------------------
    @staticmethod
    def _with_stages(df: DataFrame, stages: list[list[str]]) -> DataFrame:
        """The columns of ``df`` and ``_fp``, ``_fp2``, the last of the projections ``stages`` (each
        may name the columns of those before it)."""
        cols = df.columns
        for stage in stages:
            df = df.selectExpr("*", *stage)
        return df.select(*cols, "_fp", "_fp2")

    def fingerprint(self, df: DataFrame, as_generated: bool = False) -> DataFrame:
        if as_generated:
            return self._with_stages(df, self.raw_fp_stages)
        if self.spec.symmetry and not self.canonical_helper:
            # Catalyst pushes a projection into every branch of the actions' UNION ALL: the large
            # canonical-fingerprint expression would be compiled once per action. Cut the plan first.
            df = checkpoint(df)
        return self._with_stages(df, self.fp_stages)

    def read_level(self, depth: int) -> DataFrame:
        self._settle()  # (the store is read: a pipelined level is committed first)
        files = self.store.level_files(depth)
        return self.spark.read.schema(self.store.spark_schema).parquet(*files)

    def _find_state(self, depth: int, fp: int, fp2: int) -> dict[str, Any]:
        """The stored state (the store read once the pending commit is in: settings.pipeline)."""
        self._settle()
        return self.store.find_state(depth, fp, fp2)

    def seen(self, max_depth: int) -> DataFrame:
        self._settle()
        files = self.store.all_files(max_depth)
        return self.spark.read.schema(self.store.spark_schema).parquet(*files).select("_fp", "_fp2")

    def unseen(self, firsts: DataFrame, seen_depth: int, n_seen: int) -> DataFrame:
        """``firsts`` without the states stored through ``seen_depth`` (``n_seen`` of them)."""
        if n_seen < self.settings.index_from:
            return seen_index.plain_unseen(firsts, self.seen(seen_depth))
        self._make_index(seen_depth, n_seen)
        return self.index.unseen(firsts)

    def _make_index(self, seen_depth: int, n_seen: int) -> None:
        """The seen index made, at its first use: from the driver's last copy of the fingerprints when
        it holds exactly the ``n_seen`` states stored through ``seen_depth``, else (a resumed run, a
        cluster) from the stored levels."""
        if not self.index.fragments:
            seed, self.index_seed = self.index_seed, None
            if seed is None or seed.count != n_seen or not self.index.add_pairs(seed.tables()):
                self.index.add(self.seen(seen_depth), n_seen)

    def new_states(self, succ: DataFrame, depth: int, anti_join: bool, n_seen: int = 0, n_gen: int = 0,
                   also_seen: DataFrame | None = None, ord_base: int = 0) -> DataFrame:
        """The new states of level ``depth``, one per fingerprint (the first in TLC's order),
        numbered in that order (``_ord``, from ``ord_base``), with their constraint and invariant
        columns, checkpointed. ``also_seen``: fingerprints that are not new either (a sliced level's
        earlier slices).

        ``succ`` is the level's successors with ``_fp``, ``_fp2``, ``_key`` and a row id ``_i``,
        checkpointed. Only its narrow columns are shuffled: the first row per fingerprint, the
        anti-join and the order are worked out on (fingerprint, key, row id), and the rows they pick
        are fetched from ``succ`` by a join on the row id, broadcast up to settings.broadcast_rows of them.
        Whole states (kilobytes each for bookkeeper) are neither shuffled nor sorted."""
        rows = succ
        path = [c for c in PATH if c != "_key"]  # (cand's columns: _key is not kept)
        firsts = dedupe.first_keys(rows)
        if self.dedupe_raw_first:
            # De-duplicated as generated, then keyed by their orbit and de-duplicated again: the
            # smallest key of an orbit is the smallest of its states' smallest keys.
            picked = self._by_row_id(rows, checkpoint(firsts.select("_i")), "left_semi")
            rows = checkpoint(self._with_stages(picked.drop("_fp", "_fp2"), self.fp_stages))
            firsts = dedupe.first_keys(rows)
        if (anti_join and also_seen is None and n_seen < self.settings.driver_seen_max
                and n_gen <= self.settings.narrow_on_driver):
            # The first row per state, the anti-join and TLC's order on the driver, as for a small
            # level: the keys are 32 bytes a successor (no shuffle of them), the seen fingerprints the
            # driver's copy (where Spark's index merges past every seen state).
            # Where repeats within the level were blanked (SeenFilter.repeats), a new state's row is
            # the one that kept its columns, with the path columns of the first in TLC's order.
            repeats = SEEN in rows.columns
            narrow = ["_fp", "_fp2", "_key", "_i", *([SEEN, *path] if repeats else [])]
            every = rows.select(*narrow).toArrow()
            self._release_deferred()  # (its job runs while the driver works on the keys)
            keys = arrow_level.first_per_state(every)
            self.timer.mark("firsts")
            new = arrow_level.in_tlc_order(self._driver_seen(depth - 1).unseen(keys))
            # The depth is a column of the picked rows, not a literal: Spark writes an integer literal
            # into the generated code, so each level's fetch would compile two classes of its own (Janino
            # on the driver, then both JIT compilers again).
            picked = {"_i": new["_i"], "_ord": pc.add(arrow_level.positions(new.num_rows), ord_base),
                      "_depth": pa.array(np.full(new.num_rows, depth, dtype=np.int32))}
            if repeats:
                picked["_i"] = every["_i"].take(SeenFilter.holders(every, new))
                picked.update({c: new[c] for c in path})
            order = self.spark.createDataFrame(pa.table(picked))
            picked_ids = picked["_i"]
            n_picked = new.num_rows
            self.timer.mark("unseen")
        else:
            new = self.unseen(firsts, depth - 1, n_seen) if anti_join else firsts
            if also_seen is not None:
                new = new.join(also_seen, ["_fp", "_fp2"], "left_anti")
            new = checkpoint(new)
            self.timer.mark("unseen")
            order = dense(checkpoint(new.orderBy("_key", "_fp", "_fp2")
                                     .select("_i", F.monotonically_increasing_id().alias("_ord"),
                                             F.lit(depth).cast("int").alias("_depth"))), "_ord", "_ord", ord_base)
            n_picked = order.count()
            if SEEN in rows.columns:
                # Repeats within the level blanked: the path columns of the first row in TLC's order,
                # the state's from the row that kept them (SeenFilter.repeats).
                holders = (rows.where(~F.col(SEEN)).groupBy("_fp", "_fp2").agg(F.min("_i").alias("_h")))
                paths = self._by_row_id(rows.select("_i", "_fp", "_fp2", *path), order, "inner", n_picked)
                order = checkpoint(paths.join(holders, ["_fp", "_fp2"]).select(F.col("_h").alias("_i"), "_ord", "_depth",
                                                                                 *path))
                if order.count() != n_picked:
                    raise SeenFilter.out_of_step()
            picked_ids = order
            self.timer.mark("order")
        if SEEN in rows.columns:
            rows = rows.drop(*path)
        cand = self._by_row_id(rows, order, "inner", n_picked).select(
            *self.vars, "_fp", "_fp2", "_depth", "_ord",
            "_parent_fp", "_parent_fp2", "_action", "_parent_ord",
            F.expr(self.in_model_expr).alias("_in_model"), *([SEEN] if SEEN in rows.columns else []),
        )
        if self.settings.spark_by_part and n_picked <= self.settings.broadcast_rows:
            # Fetched by a broadcast join, the new states are in the partitions their parents were in
            # (a shuffled join hashes them by row id: balanced, grouped by ``balanced`` next level).
            parts = self._frontier_parts(n_picked)
            found_in = self._found_in(picked_ids, rows)
            spread = needs_spread(found_in, parts, self.settings.spread_skew)
            if spread:
                cand = cand.repartition(parts, "_ord")  # (settings.spark_by_part: the next level's tasks)
            self.timer.note(f"spread={int(spread)}")
        # Read again by each action's branch of the next level: kept as row objects when there are
        # not too many of them (settings.frontier_as_objects).
        return checkpoint(self.suite.with_columns(cand), as_objects=n_picked <= self.settings.frontier_as_objects)

    def _found_in(self, picked, rows: DataFrame) -> list[int]:
        """How many of the rows ``picked`` (their ``_i``: an Arrow array, or a checkpoint with that
        column) are in each partition of ``rows`` (``with_row_ids``: the partition is ``_i``'s bits
        from 33 on, as ``monotonically_increasing_id`` numbers them)."""
        q = int(rows._jdf.rdd().getNumPartitions())
        if isinstance(picked, (pa.Array, pa.ChunkedArray)):
            return np.bincount(picked.to_numpy() >> 33, minlength=q).tolist()
        counts = [0] * q
        for r in picked.groupBy(F.shiftright("_i", 33).alias("p")).count().collect():
            counts[int(r["p"])] = int(r["count"])
        return counts

    def _frontier_parts(self, n: int) -> int:
        """A Spark level's frontier partitions for ``n`` states (settings.spark_by_part): a multiple of the cores,
        at most PART_STATES states each."""
        cores = self.spark.sparkContext.defaultParallelism
        return cores * max(1, -(-n // (cores * PART_STATES)))

    def _by_row_id(self, rows: DataFrame, picked: DataFrame, how: str, n_picked: int | None = None) -> DataFrame:
        """The rows of ``rows`` whose ``_i`` is in ``picked`` (checkpointed, or on the driver: ``n_picked``
        rows), with its columns."""
        small = (picked.count() if n_picked is None else n_picked) <= self.settings.broadcast_rows
        return dedupe.by_row_id(rows, picked, how, small)

    def write_level(self, cand: DataFrame, depth: int) -> None:
        (cand.where("_in_model").select(*self.table_cols)
         .write.mode("overwrite").parquet(str(self.store.level_dir(depth))))

    def first_violation(self, cand: DataFrame, failed: list[str]) -> tuple[dict, str]:
        cond = " OR ".join(f"NOT `{InvariantSuite.column(n)}`" for n in failed)
        row = cand.where(cond).orderBy("_ord").limit(1).collect()[0].asDict(recursive=True)
        row.pop(SEEN, None)
        return row, self._first_failed(row)

    def _first_failed(self, row: dict) -> str:
        # TLC evaluates a state's invariants in the configuration's order and names the first that fails.
        return next(n for n in self.spec.invariants if row.get(InvariantSuite.column(n)) is False)

    # ---- the loop -------------------------------------------------------------------------
    def run(self, resume_from: int, totals: tuple[int, int]) -> dict[str, Any]:
        try:
            res = self._run(resume_from, totals)
        except BaseException:
            self._settle(quiet=True)  # the commit in flight ends first; the search's own error is the one raised
            raise
        self._settle()
        return res

    def _settle(self, quiet: bool = False) -> None:
        """Commit every level recorded (settings.pipeline): wait for the last write, validation and commit, and
        validate, write and commit the levels held for a batch; their error is raised."""
        self._wait_persisting(quiet)
        if self._deferred is not None:
            self._release_deferred()
            self._wait_persisting(quiet)
        if self._batch:
            self._submit_batch()
            self._wait_persisting(quiet)

    def _wait_persisting(self, quiet: bool = False) -> None:
        """Wait for the write, validation and commit in flight, if any; its error is raised."""
        pending, self._persisting = self._persisting, None
        if pending is None:
            return
        try:
            pending.result()
        except BaseException as exc:
            if not quiet:
                raise
            print(f"engine: committing the last level failed too: {exc!r}", file=sys.stderr)

    def _submit(self, task: Callable[..., None], *args) -> None:
        """Run ``task(*args)`` on the persisting thread, after what it runs now."""
        self._wait_persisting()
        if self._persister is None:
            self._persister = ThreadPoolExecutor(1, thread_name_prefix="sse-commit")
        self._persisting = self._persister.submit(task, *args)

    def _release_deferred(self) -> None:
        """Submit the deferred level's write and commit (settings.defer_write) to the persisting thread."""
        deferred, self._deferred = self._deferred, None
        if deferred is not None:
            self._submit(self._persist, *deferred)

    def _submit_batch(self) -> None:
        self._release_deferred()  # (a deferred level was recorded before any level of the batch)
        batch, self._batch = self._batch, []
        self._submit(self._persist_batch, batch)

    def _run(self, resume_from: int, totals: tuple[int, int]) -> dict[str, Any]:
        distinct_total, generated_total = totals
        depth = resume_from
        if depth == 0:
            t0 = time.time()
            init = self.fingerprint(self.cm.init(self.spark)).selectExpr(
                "*", "CAST(NULL AS BIGINT) AS _parent_fp", "CAST(NULL AS BIGINT) AS _parent_fp2",
                "CAST(NULL AS BIGINT) AS _parent_ord")
            # Initial states are mostly a handful: their job runs interpreted (settings.interpret_below).
            with interpreted(self.spark):
                small = self._annotate(init).limit(ARROW_INIT + 1).toArrow()
            if small.num_rows <= ARROW_INIT:
                n_gen = small.num_rows
                self.row_bytes = arrow_level.table_bytes(small) / max(n_gen, 1)
                finding = self._finish_arrow_level(arrow_level.first_per_state(small), 1, n_gen, distinct_total,
                                                   generated_total, t0, None, {"Init": n_gen})
            else:
                fps = dedupe.with_row_ids(checkpoint(init))
                n_gen = fps.count()
                cand = self.new_states(fps, 1, anti_join=False)
                finding = self._finish_level(cand, 1, n_gen, distinct_total, generated_total, t0,
                                             deadlocked=None, per_action={"Init": n_gen})
            self._release()
            if finding:
                return finding
            distinct_total, generated_total = self._totals
            depth = 1

        while True:
            if cancelled.is_set():
                raise KeyboardInterrupt
            t0 = time.time()
            n_frontier = self._frontier_size(depth)
            if n_frontier == 0:
                return {"result": "ok", "depth": depth, "distinct": distinct_total, "generated": generated_total}
            if self._on_driver(depth, n_frontier):
                self._spark_before = False
                finding = self._arrow_level(depth, n_frontier, distinct_total, generated_total, t0)
            else:
                self._spark_before = True
                finding = self._spark_level(depth, n_frontier, distinct_total, generated_total, t0)
            self._release()
            if finding:
                return finding
            distinct_total, generated_total = self._totals
            if self._last_new == 0:
                return {"result": "ok", "depth": depth, "distinct": distinct_total, "generated": generated_total}
            depth += 1

    def _frontier(self, depth: int) -> DataFrame:
        """The level's stored states as the actions' ``frontier``: the variables, ``_parent`` (the
        identity successors carry), and the row's own ``_ord``, ``_fp``, ``_fp2``."""
        return self._as_frontier(self.read_level(depth))

    def _as_frontier(self, states: DataFrame) -> DataFrame:
        return states.selectExpr(*[f"`{v}`" for v in self.vars],
                                 "named_struct('fp', _fp, 'fp2', _fp2, 'ord', _ord) AS _parent", "_ord", "_fp", "_fp2")

    def _annotate(self, df: DataFrame, unless: str | None = None) -> DataFrame:
        """``df`` with the state constraint (``_in_model``) and every invariant evaluated (NULL where
        the column ``unless`` is true)."""
        return self.suite.with_columns(df.withColumn("_in_model", F.expr(guarded(self.in_model_expr, unless))),
                                       unless)

    def _spark_level(self, depth: int, n_frontier: int, distinct_total: int, generated_total: int,
                     t0: float) -> dict | None:
        """A level whose successors stay in Spark, from the actions to the written Parquet files."""
        progress = SliceProgress.resume(self.store, depth)  # (a level an earlier process left in its slices)
        slices = self._slices(n_frontier)
        if progress is not None or slices > 1:
            return self._sliced_level(depth, slices, progress, distinct_total, generated_total, t0)
        # The frontier is a checkpoint, read by each action's branch as one node (re-planning the union of
        # every action for each job would cost the driver time every level): the new states the level
        # before kept checkpointed when Spark finished it, or its stored files read back and checkpointed.
        parts = self._frontier_parts(n_frontier)
        fingerprinted, read_back = None, None
        if self.kept is not None and self.kept[0] == depth:
            # A partition per core (or PART_STATES), of about equal size: without settings.spark_by_part
            # the kept states are in the partitions of the level's successors (the union's, a branch per
            # action each), and each would be a task per action again.
            rows = balanced(self.kept[1], parts)
            frontier = self._as_frontier(rows.where("_in_model"))
            held = self._held_rows(parts, rows) if _partitions(rows) == parts else None
            if held is not None:
                fingerprinted = held.run(rows)
        elif self.settings.spark_by_part:
            # The stored states read back in a kept level's columns, so that this level runs the
            # plan the next ones hold (one plan and one copy of the actions' generated code a run;
            # a plan of its own would cost the driver its planning, and the JIT would compile its
            # code again).
            # After a level finished on the driver, from the driver's copy (``_driver_frontier``).
            copied = self._driver_frontier(depth, parts)
            stored = copied if copied is not None else self._stored_as_kept(depth)
            held = self._held_rows(parts, stored)
            if held is not None:
                read_back = checkpoint(stored if copied is not None else stored.repartition(parts, "_ord"),
                                       as_objects=n_frontier <= self.settings.frontier_as_objects)
                frontier = self._as_frontier(read_back)
                fingerprinted = held.run(read_back)
            else:
                frontier = read_back = checkpoint(self._frontier(depth).repartition(parts, "_ord"))
        else:
            frontier = read_back = checkpoint(self._frontier(depth))
        self.timer.mark("frontier")
        succ, n_gen, per_action, deadlocked = self._expanded(depth, frontier, fingerprinted, n_frontier)
        cand = self.new_states(succ, depth + 1, anti_join=True, n_seen=distinct_total, n_gen=n_gen)
        self.timer.mark("fetch")
        self._settle()  # (the level before written and committed before this one is recorded)
        finding = self._finish_level(cand, depth + 1, n_gen, distinct_total, generated_total, t0, deadlocked,
                                     per_action)
        if read_back is not None:
            read_back.unpersist()
        return finding

    def _slices(self, n_frontier: int) -> int:
        """How many slices level ``n_frontier``'s expansion takes (settings.slice_successors)."""
        return count_slices(n_frontier, self._figs, self.settings.slice_successors, len(self.cm.action_names))

    def _sliced_level(self, depth: int, slices: int, progress: SliceProgress | None, distinct_total: int,
                      generated_total: int, t0: float) -> dict | None:
        """A level too large to hold its successors at once (settings.slice_successors), expanded in
        ``slices`` slices of its frontier, each a range of ``_ord``, in order, or from where
        ``progress`` (an earlier process's) left it. The successors' order key begins with the
        parent's ``_ord``, so every successor of a slice comes before those of the next in TLC's
        order: a state's first path is in the first slice that meets it, and a slice's new states
        are those not stored and not new in an earlier slice (``new_states``'s ``also_seen``).
        Numbered on from the slices before, the level's states, counts and order are those of the
        level expanded whole; only a slice's successors are on disk at a time (the level's disk peak
        is a slice's). Each slice's new states are written to a folder of its own and listed in the
        level's progress as it ends (engine.search.slices), so a run killed within the level resumes
        at its next slice; the level is committed once, after its last. A violation or deadlock ends
        the level at its slice, with the figures of the slices through it."""
        self._settle()  # (the level before committed: each slice writes into this level's folder)
        # A slice reads the level's stored files that meet its range of ``_ord`` (``files_by_slice``:
        # a level written in slices has files of disjoint ranges); where the files span the level,
        # the frontier is split by ``_ord`` once, into a folder per slice (one pass over the level),
        # kept until the level is committed, for a resume.
        split = self.store.root / "_frontier" / f"slices-{depth:06d}"
        groups = None
        if progress is not None:
            groups = files_by_slice(self.store.level_files(depth), progress.bounds)
            if groups is None and not split.is_dir():
                # The split is gone: the level from its start, its progress forgotten first (a run
                # killed while it splits again must not take a part of the new split for the old one).
                progress.clear()
                progress = None
        if progress is None:
            held = self.kept is not None and self.kept[0] == depth
            source = (self.kept[1].where("_in_model").select(*self.table_cols) if held
                      else self.read_level(depth))
            bounds = None if held else bounds_from_files(self.store.level_files(depth), slices,
                                                        block_over=ALIGNED_OVER)
            if bounds is not None:
                groups = files_by_slice(self.store.level_files(depth), bounds)
            else:
                bounds = slice_bounds(source, slices)
                which = F.lit(0)
                for i, b in enumerate(bounds):
                    which = F.when(F.col("_ord") >= F.lit(b), F.lit(i + 1)).otherwise(which)
                shutil.rmtree(split, ignore_errors=True)
                source.withColumn("_slice", which).write.partitionBy("_slice").parquet(str(split))
            progress = SliceProgress.start(self.store, depth, bounds)  # (after the split, if any, is whole)
        else:
            print(f"engine: depth {depth + 1} resumes at slice {progress.next_slice + 1} of {progress.slices}",
                  file=sys.stderr, flush=True)
        if self.kept is not None:
            self.kept[1].unpersist()  # (the level before's states: in the split folder now)
            self.kept = None
        self.timer.note(f"slices={progress.slices}" + ("" if groups is None else " read=stored"))
        self.timer.mark("split")
        n_gen, n_new, n_out, numbered = progress.generated, progress.new, progress.out, progress.numbered
        per_action = progress.actions(self.cm.action_names)
        # each slice's new states' fingerprints, checkpointed (those of an earlier process's, read back)
        earlier: list[DataFrame] = []
        if progress.folders():
            earlier.append(checkpoint(self.spark.read.schema(self.store.spark_schema)
                                      .parquet(*map(str, progress.folders())).select("_fp", "_fp2")))
        violation = deadlocked = None
        for i in range(progress.next_slice, progress.slices):
            if groups is None:
                files = sorted(str(f) for f in (split / f"_slice={i}").glob("*.parquet"))
                n_part = sum(pq.read_metadata(f).num_rows for f in files)
                rows = self.spark.read.schema(self.store.spark_schema).parquet(*files) if files else None
            else:
                rows = (progress.within(self.spark.read.schema(self.store.spark_schema).parquet(*groups[i]), i)
                        if groups[i] else None)
                n_part = rows.count() if rows is not None else 0  # (the _ord column alone is read)
            if n_part == 0:
                progress.record(SliceRecord(i, None, 0, 0, 0, 0))
                continue
            frontier = checkpoint(self._as_frontier(rows).repartition(self._frontier_parts(n_part), "_ord"))
            self.timer.mark("frontier")
            succ, n_got, got, deadlocked = self._expanded(depth, frontier, None, n_part)
            n_gen += n_got
            for a, n in got.items():
                per_action[a] += n
            cand = self.new_states(succ, depth + 1, anti_join=True, n_seen=distinct_total, n_gen=n_got,
                                   also_seen=functools.reduce(DataFrame.unionAll, earlier) if earlier else None,
                                   ord_base=numbered)
            self.timer.mark("fetch")
            counts = cand.agg(F.count_if(F.col("_in_model")).alias("i"), F.count_if(~F.col("_in_model")).alias("o"),
                              F.count_if(F.col(SEEN) if SEEN in cand.columns else F.lit(False)).alias("s")
                              ).collect()[0]
            if counts["s"]:
                raise SeenFilter.out_of_step()
            got_new, got_out = int(counts["i"]), int(counts["o"])
            n_new, n_out, numbered = n_new + got_new, n_out + got_out, numbered + got_new + got_out
            self.timer.mark("dedupe")
            report = self.suite.validate(cand)
            self.timer.mark("gx")
            violation = self.first_violation(cand, report.failed) if not report.success else None
            if self._deadlock_first(deadlocked, violation):
                progress.clear()
                shutil.rmtree(split, ignore_errors=True)
                return self._deadlock(deadlocked, depth, distinct_total, generated_total + n_gen)
            folder = progress.new_folder(i) if got_new else None
            if folder is not None:
                cand.where("_in_model").select(*self.table_cols).write.parquet(str(folder))
            progress.record(SliceRecord(i, folder.name if folder else None, n_part, n_got, got_new, got_out, got),
                            listed=violation is None)
            self.timer.mark("write")
            print(slice_line(depth + 1, i, progress.slices, n_part, n_got, got_new, time.time() - t0),
                  file=sys.stderr, flush=True)
            test_hook(self.settings, f"after-slice-{i}", depth + 1)
            if violation is not None:
                break
            earlier.append(checkpoint(cand.select("_fp", "_fp2")))
            del rows, frontier, succ, cand
            # The slice's checkpoints released as a level's are, the earlier slices' fingerprints kept.
            self._release(also={_checkpoint_rdd_id(f) for f in earlier})
            _collect_garbage(self.spark)  # (the slice's shuffle files go with their RDDs)
        # (The next level reads this one back from its files: ``kept`` is None.)
        found = self._record_level(depth + 1, n_gen, n_new, n_out, distinct_total, generated_total, t0, violation,
                                   per_action, None, folders=progress.folders())
        progress.clear()
        shutil.rmtree(split, ignore_errors=True)
        return found

    def _expanded(self, depth: int, frontier: DataFrame, fingerprinted: DataFrame | None,
                  n_frontier: int) -> tuple[DataFrame, int, dict[str, int], dict | None]:
        """The successors of ``frontier`` (``n_frontier`` states of level ``depth``; ``fingerprinted``:
        already planned by a held plan) checkpointed and numbered (``with_row_ids``), their count and
        count per action, and the first state of ``frontier`` without a successor (deadlock checked).
        Terminal findings among ``frontier`` are counted."""
        if fingerprinted is None:
            fingerprinted, _ = self._spark_successors(
                self.cm.successors(self.spark, frontier.drop("_ord", "_fp", "_fp2")), n_frontier)
        # The successors are counted, per action too (TLC's coverage), while they are checkpointed
        # (observed metrics: no job of their own). The parents that have one (deadlock) or one that
        # moves (terminal findings) are distinct counts, which need a job, where they are asked for.
        moving = ~((F.col("_fp") == F.col("_parent_fp")) & (F.col("_fp2") == F.col("_parent_fp2")))
        names = self.cm.action_names
        counted = Observation(f"successors of level {depth}")
        self.seen_filter.open_level()
        made = checkpoint(fingerprinted
                          .observe(counted, F.count(F.lit(1)).alias("n"),
                                   *[F.count_if(F.col("_action") == F.lit(a)).alias(f"a{i}")
                                     for i, a in enumerate(names)]),
                          as_objects=self.seen_filter.repeats and SEEN in fingerprinted.columns
                          and n_frontier * self._fanout() <= self.settings.successors_as_objects)
        agg = dict(counted.get)
        # The level before may still be writing its Parquet files (settings.pipeline), alongside this
        # level's planning and job; what reads the store from here on commits it first (``_settle``). A
        # level deferred (settings.defer_write) is submitted once this level's narrow columns are collected.
        self._wait_persisting()
        self.timer.mark("expand")
        succ = dedupe.with_row_ids(largest_first(made) if int(agg["n"]) >= LARGEST_FIRST_FROM else made)
        distinct = []
        if self.spec.deadlock:
            distinct.append(F.count_distinct("_parent_ord").alias("p"))
        if self.cm.terminal_exprs:
            distinct.append(F.count_distinct(F.when(moving, F.col("_parent_ord"))).alias("m"))
        if distinct:
            agg.update(succ.agg(*distinct).collect()[0].asDict())
        n_gen = int(agg["n"])
        self._measure_fanout(n_gen, n_frontier)
        self.spark.conf.set("spark.sql.shuffle.partitions",
                            str(max(self.base_partitions, -(-n_gen // self.settings.rows_per_partition))))
        n_parents = int(agg.get("p", n_frontier))
        n_moving = int(agg.get("m", n_frontier))
        per_action = {a: int(agg[f"a{i}"]) for i, a in enumerate(names)}
        self.timer.mark("counts")
        if self.cm.terminal_exprs and n_moving < n_frontier:
            movers = succ.where(moving).select(F.col("_parent_ord").alias("_ord")).distinct()
            self._terminal_findings(frontier.join(movers, on="_ord", how="left_anti"), depth)
        deadlocked = None
        if self.spec.deadlock and n_parents < n_frontier:
            enabled = succ.select(F.col("_parent_ord").alias("_ord")).distinct()
            first = (frontier.join(enabled, on="_ord", how="left_anti")
                     .orderBy("_ord").limit(1).select("_fp", "_fp2").collect()[0])
            deadlocked = self._find_state(depth, first["_fp"], first["_fp2"])
        return succ, n_gen, per_action, deadlocked

    def _spark_successors(self, successors: DataFrame, n_frontier: int | None = None) -> tuple[DataFrame, bool]:
        """A Spark level's ``successors`` (the actions' union), fingerprinted, and blanked where the
        seen filter knows them; and whether the union runs by part."""
        cores = self.spark.sparkContext.defaultParallelism
        # The union has a partition per action and frontier partition, and each task deserializes
        # the whole plan (every action's) and generates the code of the operators outside
        # whole-stage code; by part, a task runs every action over its frontier partition.
        # Otherwise a small level gets one task per core.
        one_a_part = (union_by_part(self.spark, successors, threads=self.settings.planning_threads)
                      if self.settings.spark_by_part else None)
        by_part = (one_a_part is not None
                   and int(one_a_part._jdf.queryExecution().analyzed().rdd().getNumPartitions()) >= cores)
        if by_part:
            successors = one_a_part
        elif n_frontier is not None and n_frontier <= SMALL_FRONTIER:
            successors = successors.coalesce(cores)
        return self._fingerprinted(successors), by_part

    def _fingerprinted(self, successors: DataFrame) -> DataFrame:
        """The actions' ``successors`` fingerprinted, and blanked where the seen filter knows them."""
        fingerprinted = self.fingerprint(successors, as_generated=self.dedupe_raw_first)
        if not self.dedupe_raw_first:  # (de-duplicated as generated first: not the seen fingerprints)
            fingerprinted = self.seen_filter.blank(self.seen_filter.mark(fingerprinted), self.vars)
        return fingerprinted

    def _kept_schema(self) -> StructType:
        """The columns a kept level's states begin with (``new_states``), those the held plans read."""
        return StructType([*self.store.spark_schema.fields, StructField("_parent_ord", LongType()),
                           StructField("_in_model", BooleanType())])

    def _kept_columns(self) -> list[str]:
        return [f.name for f in self._kept_schema().fields]

    def _union_over(self, leaf: DataFrame) -> DataFrame:
        """Every action's successors of the states ``leaf`` holds in ``_kept_columns`` (those within
        the constraint): the union the held plans run, small levels' and Spark levels' alike."""
        return self.cm.successors(self.spark, self._as_frontier(leaf.where("_in_model")).drop("_ord", "_fp", "_fp2"))

    def _stored_as_kept(self, depth: int) -> DataFrame:
        """The level's stored states in the columns a kept level's begin with (``_kept_columns``):
        every stored state is within the constraint, and ``_parent_ord`` is not read again."""
        return self.read_level(depth).select(*self.table_cols, F.lit(None).cast("bigint").alias("_parent_ord"),
                                             F.lit(True).alias("_in_model"))

    def _driver_frontier(self, depth: int, parts: int) -> DataFrame | None:
        """The level's states in ``_kept_columns`` from the driver's copy of them (the level before
        finished on the driver), written as the small levels' Arrow files (a partition each) and read
        when the DataFrame's job runs; None without such a copy, or where the files are not of
        ``parts`` partitions. Read back from the store, the level would wait for the level before's
        Parquet files to be committed, then read them and spread them by ``_ord`` over its partitions
        (a shuffle of every state)."""
        union = self.held_union
        if (not self.hold_spark or self.held is None or self.held[0] != depth or union is None
                or union.parts != parts):
            return None  # (without the held plan, the level reads the store: ``_frontier``)
        return union.rows(self._kept_leaf(self.held[1].select(self.table_cols)))

    @staticmethod
    def _kept_leaf(table: pa.Table) -> pa.Table:
        """A level's stored states (``table_cols``) in ``_kept_columns``: every stored state is within
        the constraint, and ``_parent_ord`` is not read again."""
        return (table.append_column("_parent_ord", pa.nulls(table.num_rows, pa.int64()))
                .append_column("_in_model", pa.array(np.ones(table.num_rows, dtype=bool))))

    def _held_rows(self, parts: int, rows: DataFrame) -> HeldRows | None:
        """The Spark levels' plan held for frontiers of ``parts`` partitions whose rows begin with
        ``_kept_columns`` of ``rows``' types (settings.hold_spark), made at its first use; None where there is
        none (the union does not run by part, or its plan cannot be run again). The plan reads those
        columns alone, by position: a kept level's states carry their invariant columns after them."""
        names = self._kept_columns()
        if not self.hold_spark or rows.columns[:len(names)] != names:
            return None
        schema = StructType(rows.schema.fields[:len(names)])
        key = (parts, nullable(schema).json(), self.seen_filter.on)  # (HeldRows: planned for it nullable)
        if key not in self.held_rows:
            # The small levels' union when it was planned over the same leaf (settings.shared_leaf): only the
            # fingerprints and the seen filter are planned here.
            try:
                shared = self.held_union.shared_union(parts, schema) if self.held_union is not None else None
                held = HeldRows(self.spark, parts, schema, switch=shared[0] if shared else None)
                if shared is not None:
                    fingerprinted = self._fingerprinted(shared[1])
                else:
                    fingerprinted, by_part = self._spark_successors(self._union_over(held.leaf))
                    if not by_part:
                        raise HeldPlanUnavailable("the actions' union does not run by part")
                held.hold(fingerprinted)
            except HeldPlanUnavailable as exc:
                print(f"engine: planning each Spark level ({exc})", file=sys.stderr)
                held = None
            self.held_rows[key] = held
            self.timer.note(f"held_plans={len(self.held_rows)}")
        return self.held_rows[key]

    def _arrow_level(self, depth: int, n_frontier: int, distinct_total: int, generated_total: int,
                     t0: float) -> dict | None:
        """A small level: the actions, fingerprints, constraint and invariants in one Spark job whose
        result is collected as Arrow; the rest on the driver (engine.search.arrow_level)."""
        # The constraint and the invariants concern new states only. Over a few successors they are
        # evaluated in the same job; over many, in a second job over the new states alone (on large
        # levels most successors are repeats, and the invariants' lambdas are costly), unless the job
        # blanks repeats and so evaluates them on one row a new state already
        # (settings.annotate_blanked_inline).
        inline = (n_frontier * self._fanout() <= self.settings.inline_annotation
                  or self.settings.annotate_blanked_inline and self.seen_filter.repeats)
        self.seen_filter.open_level()
        succ = self._expand_arrow(depth, n_frontier, inline)
        self.timer.mark("expand")
        if self._persisting is not None:
            self._wait_persisting()  # (its error, if it failed, before this level goes on)
            self.timer.mark("settle")
        n_gen = succ.num_rows
        if n_gen:
            self.row_bytes = arrow_level.table_bytes(succ) / n_gen
        self._measure_fanout(n_gen, n_frontier)
        counts = {r["values"]: r["counts"] for r in pc.value_counts(succ["_action"]).to_pylist()}
        per_action = {a: int(counts.get(a, 0)) for a in self.cm.action_names}
        self.timer.mark("counts")
        ids = None
        if self.cm.terminal_exprs:
            moving = pc.or_(pc.not_equal(succ["_fp"], succ["_parent_fp"]), pc.not_equal(succ["_fp2"], succ["_parent_fp2"]))
            movers = pc.unique(succ.filter(moving)["_parent_ord"])
            if len(movers) < n_frontier:
                ids = self._level_table(depth, ["_ord", "_fp", "_fp2"])
                still = ids.filter(pc.invert(pc.is_in(ids["_ord"], value_set=movers))).select(["_ord"])
                self._terminal_findings(self._frontier(depth).join(self.spark.createDataFrame(still), on="_ord",
                                                                    how="left_semi"), depth)
        deadlocked = None
        if self.spec.deadlock:
            enabled = pc.unique(succ["_parent_ord"])
            if len(enabled) < n_frontier:
                ids = ids if ids is not None else self._level_table(depth, ["_ord", "_fp", "_fp2"])
                stuck = ids.filter(pc.invert(pc.is_in(ids["_ord"], value_set=enabled)))
                first = stuck.take(pc.sort_indices(stuck["_ord"])).slice(0, 1).to_pylist()[0]
                deadlocked = self._find_state(depth, first["_fp"], first["_fp2"])
        # The first row per state and the anti-join on the narrow columns; the whole rows (nested,
        # kilobytes for bookkeeper) are taken once, for the new states.
        keys = pa.table({"_key": succ["_key"], "_fp": succ["_fp"], "_fp2": succ["_fp2"],
                         "_row": arrow_level.positions(n_gen)})
        firsts = arrow_level.first_per_state(keys)
        self.timer.mark("first")
        # (The state's columns from the row that kept them: SeenFilter.repeats.)
        new = SeenFilter.check(SeenFilter.with_holders(succ, self._unseen_arrow(firsts, depth, distinct_total)["_row"]))
        if new.num_rows:
            self.full_row_bytes = arrow_level.table_bytes(new) / new.num_rows
        self.timer.mark("unseen")
        if not inline:
            with interpreted(self.spark, new.num_rows <= self.settings.interpret_below):
                new = self._annotate_arrow(new)
        self.timer.mark("annotate")
        return self._finish_arrow_level(new, depth + 1, n_gen, distinct_total, generated_total, t0, deadlocked,
                                        per_action)

    def _level_table(self, depth: int, columns: list[str]) -> pa.Table:
        """Columns of the level's stored states as Arrow: held from the level before when it was small."""
        if self.held is not None and self.held[0] == depth:
            return self.held[1].select(columns)
        self._settle()  # (a level Spark finished may still be writing)
        return pads.dataset(self.store.level_files(depth), format="parquet",
                            schema=self.store.arrow_schema).to_table(columns=columns)

    def _expand_arrow(self, depth: int, n_frontier: int, annotate: bool) -> pa.Table:
        """The successors of level ``depth`` (``n_frontier`` states), fingerprinted (and annotated), as
        Arrow."""
        small = n_frontier * self._fanout() <= self.settings.interpret_below
        narrow = [*self.vars, "_ord", "_fp", "_fp2"]
        switched = self.held_union is not None and self.held_union.switched
        table = self._level_table(depth, self.table_cols if switched else narrow)
        self.timer.mark("frontier")
        if self.held_union is not None:
            try:
                self.held_union.prepare(annotate)  # planned with generated code, once
                leaf = self._kept_leaf(table) if switched else table
                # A handful of states: one task (the plan's tasks each deserialize it, and wait for the
                # one that parses the frontier).
                with self._projections_interpreted(small):
                    succ = self.held_union.successors(leaf, annotate, 1 if small else None)
            except (PySparkException, Py4JError, HeldPlanUnavailable) as exc:
                if stop_requested(exc):
                    raise KeyboardInterrupt from exc
                if isinstance(exc, PySparkException) and self.cm.locate_error(exc):
                    raise  # the model's SQL failed: planning it again would fail the same way
                # A plan that cannot be run again (an action that shuffles), or not expected; the
                # per-level plan below does the same work, only slower.
                print(f"engine: planning each level from the SQL text ({str(exc).strip().splitlines()[0]})",
                      file=sys.stderr)
                self.held_union.close()
                self.held_union = None
            else:
                HeldExpansion.check_parents(succ, table)
                return succ
        with interpreted(self.spark, small):
            frontier = self._arrow_frontier(table.select(narrow))
            successors = self.cm.successors(self.spark, frontier.drop("_ord", "_fp", "_fp2"))
            return self._finish_expansion(successors, annotate).toArrow()

    @contextmanager
    def _projections_interpreted(self, on: bool) -> Iterator[None]:
        """Jobs run in the block evaluate interpreted the projections Spark makes inside each task
        (for operators outside whole-stage code, such as a projection with a lambda Spark does not
        generate code for). A held plan's own code is made already; but each task would generate
        those projections' Java source anew (a cache hit then), a large share of a small level's task
        time. One setting changed and restored: two calls."""
        if not on:
            yield
            return
        if not self._factory_mode_read:
            self._factory_mode, self._factory_mode_read = self.spark.conf.get(FACTORY_MODE, None), True
        self.spark.conf.set(FACTORY_MODE, _CODEGEN_CONFS[FACTORY_MODE])
        try:
            yield
        finally:
            _restore_conf(self.spark, FACTORY_MODE, self._factory_mode)

    def _finish_expansion(self, successors: DataFrame, annotate: bool, coalesce: bool = True) -> DataFrame:
        """The union's successors (coalesced into EXPANSION_TASKS_PER_CORE tasks a core unless not
        ``coalesce``), fingerprinted, annotated when ``annotate``."""
        # Coalesced, the union is not given the fingerprint's projection in each action's branch.
        if coalesce:
            successors = successors.coalesce(self._expansion_tasks())
        succ = self.seen_filter.mark(self._with_stages(successors, self.fp_stages))
        if annotate:
            succ = self._annotate(succ, SEEN if SEEN in succ.columns else None)
        return self.seen_filter.blank(succ, self.vars)

    def _expansion_tasks(self) -> int:
        return EXPANSION_TASKS_PER_CORE * self.spark.sparkContext.defaultParallelism

    def _arrow_frontier(self, table: pa.Table) -> DataFrame:
        """``_frontier`` from the driver's copy of the level: no Parquet scan in each action's branch."""
        schema = StructType([self.store.spark_schema[c] for c in table.column_names])
        df = self.spark.createDataFrame(table, schema=schema)
        if arrow_level.table_bytes(table) > LOCAL_FRONTIER_BYTES:
            # Spark ships a driver table inside every task that scans it: once per action. Above
            # this size the level is materialized in the executors once.
            df = checkpoint(df)
        return df.selectExpr(*[f"`{v}`" for v in self.vars],
                             "named_struct('fp', _fp, 'fp2', _fp2, 'ord', _ord) AS _parent", "_ord", "_fp", "_fp2")

    def _on_driver(self, depth: int, n_frontier: int) -> bool:
        """Whether the level's successors are expected to fit on the driver (settings.arrow_level_bytes; half
        of it after a Spark level, whose frontier the driver would read back from the store, so that
        a level near the bound does not go back and forth between the two). ``settings.level_path`` other than
        auto decides it: driver, spark, or alternate (odd depths on the driver)."""
        path = self.settings.level_path
        if path != "auto":
            return path == "driver" or (path == "alternate" and depth % 2 == 1)
        bound = self.settings.arrow_level_bytes // 2 if self._spark_before else self.settings.arrow_level_bytes
        return n_frontier * self._fanout() * (self.row_bytes or 1024) <= bound

    def _fanout(self) -> float:
        """The largest successors-per-state ratio met: by this process, else (a resumed run) over the
        stored levels, else one successor an action."""
        if self.fanout is None:
            self.fanout = largest_fanout(self._figs)
        return self.fanout if self.fanout is not None else len(self.cm.action_names)

    def _annotate_arrow(self, states: pa.Table) -> pa.Table:
        """``states`` (held on the driver) with the constraint and invariant columns Spark evaluates."""
        probe = states.select(self.vars).append_column("_i", arrow_level.positions(states.num_rows))
        schema = StructType([*[self.store.spark_schema[v] for v in self.vars], StructField("_i", LongType())])
        extra = ["_in_model", *[InvariantSuite.column(n) for n in self.suite.names]]
        cols = (self._annotate(self.spark.createDataFrame(probe, schema=schema))
                .select("_i", *extra).toArrow())
        cols = cols.take(pc.sort_indices(cols["_i"]))
        for name in extra:
            states = states.append_column(name, cols[name])
        return states

    def _measure_fanout(self, n_gen: int, n_frontier: int) -> None:
        ratio = n_gen / max(n_frontier, 1)
        self.fanout = ratio if self.fanout is None else max(self.fanout, ratio)

    def _driver_seen(self, depth: int) -> arrow_level.SeenFingerprints:
        """The driver's copy of the fingerprints stored through ``depth`` (read once, then grown by each
        committed level)."""
        if self.seen_fps is None:
            self._settle()
            self.seen_fps = arrow_level.SeenFingerprints.from_files(self.store.all_files(depth), self.store.arrow_schema)
            for part in self.seen_fps.tables():
                self.seen_filter.add(part)
        return self.seen_fps

    def _forget_seen(self) -> None:
        """Past settings.driver_seen_max the seen states stay in Spark (the driver's memory stays flat): the
        driver's copy is kept only until the seen index is made from it."""
        if self.seen_fps is not None and not self.index.fragments:
            self.index_seed = self.seen_fps
        self.seen_fps = None
        if self.seen_filter.stored:
            self.seen_filter.forget_stored()
            # Successors of stored states are no longer blanked: a level's rows take (up to) their
            # whole size again.
            self.row_bytes = max(self.row_bytes or 0.0, self.full_row_bytes or 0.0) or None

    def _unseen_arrow(self, states: pa.Table, depth: int, n_seen: int) -> pa.Table:
        """``states`` without those stored through ``depth`` (``n_seen`` of them)."""
        if n_seen < self.settings.driver_seen_max:
            return self._driver_seen(depth).unseen(states)
        self._forget_seen()
        if n_seen >= self.settings.index_from and self.index.takes_pairs:
            self._make_index(depth, n_seen)
            return self.index.unseen_table(states)
        probe = self.spark.createDataFrame(pa.table({"_fp": states["_fp"], "_fp2": states["_fp2"],
                                                     "_i": arrow_level.positions(states.num_rows)}))
        kept = self.unseen(probe, depth, n_seen).select("_i").toArrow()
        return states.take(np.sort(kept.column("_i").to_numpy()))

    def _terminal_findings(self, terminal: DataFrame, depth: int) -> None:
        # States without successor where a finding's expression holds: counted, the first one (in
        # breadth-first order, so with a shortest path) kept as the example; the run goes on.
        aggs = []
        for i, expr in enumerate(self.cm.terminal_exprs.values()):
            flag = F.coalesce(F.expr(expr), F.lit(False))
            aggs += [F.count_if(flag).alias(f"n{i}"),
                     F.min_by(F.struct("_fp", "_fp2"), F.when(flag, F.col("_ord"))).alias(f"x{i}")]
        row = terminal.agg(*aggs).collect()[0]
        for i, name in enumerate(self.cm.terminal_exprs):
            n = int(row[f"n{i}"])
            if not n:
                continue
            found = self.terminal.setdefault(name, {"count": 0, "state": None})
            found["count"] += n
            if found["state"] is None:
                found["state"] = self._find_state(depth, row[f"x{i}"]["_fp"], row[f"x{i}"]["_fp2"])

    def _release(self, also: set[int | None] = frozenset()) -> None:
        # Local checkpoints live until the JVM collects their RDDs; a level needs none of the last's
        # (the seen index's fragments excepted), a slice none of its own (the RDDs ``also`` excepted).
        keep = set(self.index.rdd_ids) | set(also)
        if self.kept is not None and self._figs and self.kept[0] == self._figs[-1].depth and self.kept[2] is not None:
            keep.add(self.kept[2])  # the next level's frontier
        else:
            self.kept = None
        if self.held_union is not None and self.held_union.cache_rdd_id() is not None:
            keep.add(self.held_union.cache_rdd_id())
        unpersist_rdds(self.spark, persistent_rdd_ids(self.spark) - keep)

    def _frontier_size(self, depth: int) -> int:
        return next((f.new_states for f in self._figs if f.depth == depth), 0)

    def _index_takes_pairs(self) -> bool:
        return bool(self.index.fragments) and self.index.takes_pairs

    def _finish_level(self, cand: DataFrame, depth: int, n_gen: int, distinct_total: int,
                      generated_total: int, t0: float, deadlocked: dict | None,
                      per_action: dict[str, int]) -> dict | None:
        fps = None
        if n_gen <= self.settings.narrow_on_driver:
            # The constraint and invariant columns (booleans) in one job, counted and validated by the
            # suite on the driver, where a count and the suite's aggregation over Spark are two jobs.
            # With the fingerprints the driver's seen set grows by (rather than read from the written
            # files: the write may still run when the next level starts).
            # With them the seen index grows too, where it takes the driver's pairs (not read back).
            keys = arrow_level.KEYS if self.seen_fps is not None or self._index_takes_pairs() else []
            flags = SeenFilter.check(cand.select("_in_model", *[InvariantSuite.column(n) for n in self.suite.names],
                                                 *keys, *([SEEN] if SEEN in cand.columns else [])).toArrow())
            n_new = int(pc.sum(flags["_in_model"]).as_py() or 0)
            n_out = flags.num_rows - n_new
            if keys:
                fps = flags.filter(flags["_in_model"]).select(keys)
            self.timer.mark("dedupe")
            report = self.suite.validate_arrow(flags)
        else:
            counts = cand.agg(F.count_if(F.col("_in_model")).alias("i"),
                              F.count_if(~F.col("_in_model")).alias("o"),
                              F.count_if(F.col(SEEN) if SEEN in cand.columns else F.lit(False)).alias("s")).collect()[0]
            if counts["s"]:
                raise SeenFilter.out_of_step()
            n_new, n_out = int(counts["i"]), int(counts["o"])
            self.timer.mark("dedupe")
            report = self.suite.validate(cand)
        self.timer.mark("gx")
        violation = self.first_violation(cand, report.failed) if not report.success else None
        if self._deadlock_first(deadlocked, violation):
            cand.unpersist()
            return self._deadlock(deadlocked, depth, distinct_total, generated_total + n_gen)
        # Kept as the next level's frontier (released with that level) unless the search stops here.
        self.kept = (depth, cand, _checkpoint_rdd_id(cand)) if n_new and not violation else None
        if self.settings.pipeline and deadlocked is None and violation is None and n_new \
                and (fps is not None or self.seen_fps is None):
            # Written and committed on the persisting thread while the next level is planned and its
            # job starts (the driver alone plans; the cores would otherwise be idle meanwhile).
            return self._record_level(depth, n_gen, n_new, n_out, distinct_total, generated_total, t0, None,
                                      per_action, None, write=lambda: self.write_level(cand, depth), fps=fps,
                                      rows=cand)
        self._settle()  # (the levels before committed first)
        if n_new:
            self.write_level(cand, depth)
        self.timer.mark("write")
        if self.kept is None:
            cand.unpersist()
        return self._record_level(depth, n_gen, n_new, n_out, distinct_total, generated_total, t0, violation,
                                  per_action, None, fps=fps, rows=cand)

    def _finish_arrow_level(self, new: pa.Table, depth: int, n_gen: int, distinct_total: int,
                            generated_total: int, t0: float, deadlocked: dict | None,
                            per_action: dict[str, int]) -> dict | None:
        """``_finish_level`` for a level held on the driver: ``new`` is its unseen states, one per
        fingerprint, with their constraint and invariant columns."""
        new = arrow_level.in_tlc_order(new)
        new = (new.append_column("_depth", pa.array(np.full(new.num_rows, depth, dtype=np.int32)))
               .append_column("_ord", arrow_level.positions(new.num_rows)))
        in_model = new["_in_model"]
        n_new = int(pc.sum(in_model).as_py() or 0)
        n_out = int(pc.sum(pc.invert(in_model)).as_py() or 0)
        self.timer.mark("dedupe")
        if self.settings.pipeline and deadlocked is None and n_new and self._all_hold(new) \
                and (not self.index.fragments or self.index.takes_pairs):
            # (A seen index that cannot take the level's pairs reads its committed files: then in line.)
            return self._record_level(depth, n_gen, n_new, n_out, distinct_total, generated_total, t0, None,
                                      per_action, within_model(new), validate=new)
        report = self.suite.validate_arrow(new)
        self.timer.mark("gx")
        violation = None
        if not report.success:
            bad = None
            for name in report.failed:
                failing = pc.invert(new[InvariantSuite.column(name)])
                bad = failing if bad is None else pc.or_(bad, failing)
            row = new.filter(bad).slice(0, 1).to_pylist()[0]  # the first in _ord's order
            violation = (row, self._first_failed(row))
        if self._deadlock_first(deadlocked, violation):
            return self._deadlock(deadlocked, depth, distinct_total, generated_total + n_gen)
        stored = within_model(new)
        self._settle()  # (the levels before committed first)
        if n_new:
            self.store.write_level(depth, stored)
        self.timer.mark("write")
        return self._record_level(depth, n_gen, n_new, n_out, distinct_total, generated_total, t0, violation,
                                  per_action, stored)

    def _all_hold(self, new: pa.Table) -> bool:
        """Whether every invariant column of ``new`` is true in every row (the suite then passes)."""
        for name in self.suite.names:
            col = new[InvariantSuite.column(name)]
            if col.null_count or not pc.all(col).as_py():
                return False
        return True

    def _persist(self, fig: LevelFigures, stored: pa.Table | None, validate: pa.Table | None,
                 write: Callable[[], None] | None) -> None:
        """Validate, write and commit a level (on the persisting thread): one finished on the driver
        (``stored``, validated here), or one Spark finished (validated already; ``write`` writes it)."""
        if validate is not None:
            report = self.suite.validate_arrow(validate)
            if not report.success:  # its invariant columns all held: the suite cannot fail them
                raise RuntimeError(f"the invariant suite failed {report.failed} at depth {fig.depth}, whose "
                                   "invariant columns all held (run with SSE_PIPELINE=0 and report it)")
        if write is not None:
            write()
        else:
            self.store.write_level(fig.depth, stored)
        self.store.commit_level(fig)
        if self.progress:
            self.progress(fig, fig.new_states)

    def _add_seen(self, fig: LevelFigures, fps: pa.Table) -> None:
        """Let the driver's and the JVM's seen sets know of a committed level's fingerprints ``fps``
        (past settings.driver_seen_max, forget them)."""
        self.seen_fps.add(fps)
        if fig.distinct_total >= self.settings.driver_seen_max:
            self._forget_seen()
        else:
            self.seen_filter.add(fps)

    def _index_level(self, depth: int, fps: pa.Table | None, rows: DataFrame | None) -> None:
        """Index a committed level's fingerprints: from ``fps`` (its stored states' fingerprints) where
        the driver has them and the index takes them, else from ``rows`` (the level's candidates, kept
        in Spark) where Spark finished it, else read back from the level's files."""
        if fps is not None and self.index.takes_pairs:
            self.index.hold(fps.select(arrow_level.KEYS))
        elif rows is not None:
            self.index.add(rows.where("_in_model").select(*arrow_level.KEYS))
        else:
            self.index.add(self.read_level(depth))

    def _persist_batch(self, batch: list[tuple[LevelFigures, pa.Table, pa.Table]]) -> None:
        """``_persist`` for consecutive levels finished on the driver (settings.validate_batch): their new
        states validated in one run of the suite, then each level written and committed in order."""
        columns = [InvariantSuite.column(n) for n in self.suite.names]
        report = self.suite.validate_arrow(pa.concat_tables([v.select(columns) for _, _, v in batch]))
        if not report.success:  # their invariant columns all held: the suite cannot fail them
            raise RuntimeError(f"the invariant suite failed {report.failed} at depths "
                               f"{batch[0][0].depth}..{batch[-1][0].depth}, whose invariant columns all held "
                               "(run with SSE_PIPELINE=0 and report it)")
        for fig, stored, _ in batch:
            self._persist(fig, stored, None, None)

    @staticmethod
    def _deadlock_first(deadlocked: dict | None, violation: tuple[dict, str] | None) -> bool:
        # TLC meets the deadlocked parent before a violating successor of a later parent.
        return deadlocked is not None and (violation is None or deadlocked["_ord"] < violation[0]["_parent_ord"])

    @staticmethod
    def _deadlock(state: dict, depth: int, distinct_total: int, generated: int) -> dict:
        return {"result": "deadlock", "depth": depth - 1, "state": state, "distinct": distinct_total,
                "generated": generated}

    def _record_level(self, depth: int, n_gen: int, n_new: int, n_out: int, distinct_total: int,
                      generated_total: int, t0: float, violation: tuple[dict, str] | None,
                      per_action: dict[str, int], stored: pa.Table | None,
                      validate: pa.Table | None = None, write: Callable[[], None] | None = None,
                      fps: pa.Table | None = None, rows: DataFrame | None = None,
                      folders: list[Path] | None = None) -> dict | None:
        """Commit the written level with its figures and let the seen states know of it (``fps``: the
        stored states' fingerprints, when the driver has them; ``rows``: the candidates, where Spark
        finished the level). With ``validate`` (the level's new states, their invariant columns all
        true) or ``write`` (a level Spark finished and the suite passed), the level is validated,
        written and committed on the persisting thread (settings.pipeline)."""
        fig = LevelFigures(depth, n_gen, n_new, n_out, distinct_total + n_new, generated_total + n_gen,
                           round(time.time() - t0, 3), finding=violation[1] if violation else None,
                           actions=per_action)
        pipelined = validate is not None or write is not None
        seen_now = (n_new and not violation and self.seen_fps is not None
                    and (fps is not None or stored is not None))
        if seen_now:
            # Before the level is handed to the persisting thread, whose Python work would slow the
            # calls into the JVM; from the store (below) once it is written.
            self._add_seen(fig, fps if fps is not None else stored)
        if pipelined and self.settings.validate_batch and write is None and validate.num_rows < VALIDATE_BATCH_ROWS:
            self._batch.append((fig, stored, validate))
            if (sum(v.num_rows for _, _, v in self._batch) >= VALIDATE_BATCH_ROWS
                    or len(self._batch) >= self.settings.validate_batch_levels):
                self._submit_batch()
        elif pipelined:
            self._settle()
            if self.settings.defer_write and write is not None:
                self._deferred = (fig, stored, validate, write)
            else:
                self._submit(self._persist, fig, stored, validate, write)
        elif n_new or violation:
            self._settle()
            self.store.commit_level(fig, folders)
        self.held = (depth, stored) if stored is not None and n_new and not violation else None
        if n_new and not violation:
            if self.index.fragments:
                self._index_level(depth, fps if fps is not None else stored, rows)
            if self.seen_fps is not None and not seen_now:
                self._add_seen(fig, self._level_table(depth, arrow_level.KEYS))
        self.timer.mark("commit")
        self.timer.flush(depth)
        self._figs.append(fig)
        self._totals = (fig.distinct_total, fig.generated_total)
        self._last_new = n_new
        if self.progress and not pipelined:
            self.progress(fig, n_new)
        if violation:
            row, name = violation
            return {"result": "invariant_violated", "invariant": name, "depth": depth, "state": row,
                    "distinct": fig.distinct_total, "generated": fig.generated_total}
        return None


def _canonical_helper(spark: SparkSession, schema: StructType, settings: Settings) -> bool:
    """Whether symmetry's smallest image is computed by the JVM helper ``sse_canonical`` (one call a
    state) rather than in SQL (an image a permutation, written out: a projection too large for Spark
    to compile into the stage's generated code, so each task generates its code again). Both pick
    the same image (tests/test_symmetry.py)."""
    from engine.search.symmetry import helper_supports
    if not jvm_ext.use(spark, "Canonical", settings, "symmetry", "the orbit's smallest member in SQL, as on "
                       "the portable path"):
        return False
    if not helper_supports(schema):
        print("engine: symmetry: the orbit's smallest member in SQL, as on the portable path (sse_canonical "
              "orders booleans, integers, strings, arrays and structs only)", file=sys.stderr)
        return False
    return True


def _unplanned(made: DataFrame) -> DataFrame:
    """A (local) checkpoint's rows under a plan of their own. A checkpoint's plan keeps the constraints
    and statistics of the query that made it, which for a level's new states include the frontier's
    own: carried from level to level, they grow until optimizing a level takes minutes (and the heap)."""
    return rows_frame(made.sparkSession, made._jdf.queryExecution().analyzed().rdd(), made.schema)


def _block_manager_master(spark: SparkSession):
    """The driver's ``BlockManagerMaster``. ``SparkEnv`` is reached through method handles, not
    Py4J: Py4J lists a class's methods to call one, and in Spark 4.3 one of ``SparkEnv``'s methods
    names a protobuf class that PySpark does not ship (``NoClassDefFoundError``)."""
    jvm, gateway = spark._jvm, spark.sparkContext._gateway
    handles, types = jvm.java.lang.invoke.MethodHandles.publicLookup(), jvm.java.lang.invoke.MethodType
    env_class = jvm.java.lang.Class.forName("org.apache.spark.SparkEnv")
    manager_class = jvm.java.lang.Class.forName("org.apache.spark.storage.BlockManager")
    env = handles.findStatic(env_class, "get", types.methodType(env_class)).invokeWithArguments(
        gateway.new_array(jvm.java.lang.Object, 0))
    args = gateway.new_array(jvm.java.lang.Object, 1)
    args[0] = env
    manager = handles.findVirtual(env_class, "blockManager", types.methodType(manager_class)).invokeWithArguments(args)
    return manager.master()


def _block_sizes(spark: SparkSession, rdd) -> list[int]:
    """The stored bytes (memory and disk) of each partition of the cached JVM RDD ``rdd``."""
    jvm = spark._jvm
    master = _block_manager_master(spark)
    sizes = []
    for p in range(int(rdd.getNumPartitions())):
        statuses = master.getBlockStatus(jvm.org.apache.spark.storage.RDDBlockId(rdd.id(), p), False)
        it = statuses.valuesIterator()
        size = 0
        while it.hasNext():
            st = it.next()
            size += int(st.memSize()) + int(st.diskSize())
        sizes.append(size)
    return sizes


def largest_first(made: DataFrame) -> DataFrame:
    """A (local) checkpoint's rows with its partitions in decreasing order of their stored size.

    A large level's successors have a partition per action and frontier part, and the actions make
    very different numbers of successors. Spark runs a job's tasks in partition order, so when a
    large partition comes last, the jobs over the successors (the narrow columns' collect, fetching
    the new states, then writing their Parquet, whose partitions are the same) end with one task
    alone. Largest first, the small ones fill the other core at the end. Only the order of the partitions
    changes (each is the checkpoint's own block, read in place), not their rows."""
    if _checkpoint_rdd_id(made) is None:
        return made
    rdd = made._jdf.queryExecution().analyzed().rdd()
    spark = made.sparkSession
    n = int(rdd.getNumPartitions())
    if n <= spark.sparkContext.defaultParallelism:
        return made
    sizes = _block_sizes(spark, rdd)
    order = sorted(range(n), key=lambda p: -sizes[p])
    if order == list(range(n)):
        return made
    jvm = spark._jvm
    parts = spark.sparkContext._gateway.new_array(jvm.org.apache.spark.api.java.JavaRDD, n)
    for i, p in enumerate(order):
        parts[i] = partitions_of(spark, rdd, [p]).toJavaRDD()
    return rows_frame(spark, spark.sparkContext._jsc.union(parts).rdd(), made.schema)


def needs_spread(found_in: list[int], parts: int, skew: float = 0.05) -> bool:
    """Whether a level's new states, ``found_in[i]`` of them in partition i, must be spread (a
    shuffle, by a hash of ``_ord``) to make the next level's frontier: ``parts`` partitions of about
    equal size. Left where they were found, each partition's share of the next level is its parents'
    share times how many new states they led to, which can compound level after level until one
    task runs alone for most of a level; where the shares are even (say one action, every state one
    or two successors) the shuffle is all cost."""
    if len(found_in) != parts:
        return True
    return max(found_in, default=0) > (1 + skew) * sum(found_in) / parts


def balanced(made: DataFrame, parts: int) -> DataFrame:
    """A (local) checkpoint's rows in ``parts`` partitions of about equal stored size, under a plan of
    their own (``_unplanned``): its partitions grouped, largest first into the lightest group, each
    group read as one partition (the checkpoint's own blocks, in place: no shuffle).

    A Spark level's actions run a task per frontier partition (``union_by_part``), so the frontier's
    partitions are the level's tasks: Spark's ``coalesce`` groups partitions by their number, and a
    level's new states come in partitions of very different sizes (a partition per action and
    frontier part of the level before)."""
    if _checkpoint_rdd_id(made) is None:
        return made
    rdd = made._jdf.queryExecution().analyzed().rdd()
    spark = made.sparkSession
    n = int(rdd.getNumPartitions())
    if n <= parts:
        return _unplanned(made)
    sizes = _block_sizes(spark, rdd)
    groups: list[list[int]] = [[] for _ in range(parts)]
    loads = [0] * parts
    for p in sorted(range(n), key=lambda p: -sizes[p]):
        g = loads.index(min(loads))
        groups[g].append(p)
        loads[g] += sizes[p]
    jvm = spark._jvm
    out = spark.sparkContext._gateway.new_array(jvm.org.apache.spark.api.java.JavaRDD, parts)
    for g, members in enumerate(groups):
        # (coalesce(1) of the group's pruned partitions: one partition holding them all, in order)
        out[g] = partitions_of(spark, rdd, sorted(members)).toJavaRDD().coalesce(1)
    return rows_frame(spark, spark.sparkContext._jsc.union(out).rdd(), made.schema)


def _partitions(df: DataFrame) -> int:
    """The partitions of a DataFrame whose plan is an RDD (a checkpoint, ``rows_frame``)."""
    return int(df._jdf.queryExecution().analyzed().rdd().getNumPartitions())


def _collect_garbage(spark: SparkSession) -> None:
    """Collect the driver's garbage, Python's and then the JVM's: Spark deletes a shuffle's files once
    the JVM has collected its RDDs (its context cleaner), which a level that takes an hour would
    otherwise leave to the cleaner's own half-hourly collection."""
    gc.collect()  # (Python's DataFrames hold their JVM objects)
    try:
        spark._jvm.System.gc()
    except Py4JError:
        pass


def _checkpoint_rdd_id(df: DataFrame) -> int | None:
    """The id of the RDD holding a (local) checkpoint's rows: the one node of its plan."""
    plan = df._jdf.queryExecution().analyzed()
    return int(plan.rdd().id()) if plan.getClass().getSimpleName() == "LogicalRDD" else None


