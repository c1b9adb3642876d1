"""The breadth-first search: one level at a time, each level the same stages in order.

    frontier (level k) -> expand -> fingerprint -> dedupe -> unseen -> invariants -> commit (level k + 1)

``check`` sets a run up (the session, the model's SQL, the run's Delta tables, where to resume), runs
the search on one of two paths, and writes the outcome:

- the **portable path** (``PortableSearch``, here): every stage a module of engine.search, on public
  PySpark DataFrame and SQL APIs alone. It runs wherever PySpark runs: local mode, a cluster, Spark
  Connect (Databricks serverless and standard clusters).
- the **local accelerator** (engine.accel): the same stages, with small levels finished on the driver
  as Arrow and the engine's JVM helpers, in classic local mode. It is chosen only where it can work
  (``choose_path``), and it falls back to the portable stage where one of its hooks is missing.

Both give the same states, counts, depths and counterexamples.
"""
from __future__ import annotations

import functools
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Callable

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import engine.search.invariants as invariants
from engine.errors import EngineError, ModelError, UsageError, WarehouseError, spark_lost
from engine.model.assume import check_assumptions
from engine.model.loader import RunSpec
from engine.runtime.session import declare_constants, get_spark, interpreted, is_classic, kept_observed
import engine.search.commit as commit
import engine.search.dedupe as dedupe
import engine.search.expand as expand
import engine.search.seen as seen
from engine.search.expand import CompiledModel, compile_model
from engine.search.encoding import JSON, ROW_BYTES, fingerprint_note
from engine.search.encoding import scheme as fingerprint_scheme
from engine.search.control import StageTimer, cancelled, stop_requested
from engine.search.fingerprint import Fingerprinter
from engine.search.invariants import InvariantSuite
from engine.search.outcome import Outcome, outcome_from_row, outcome_row, run_spec_json, write_trace_itf
from engine.search.slices import SliceProgress, SliceRecord, count_slices
from engine.settings import Settings
from engine.store.runs import (LevelFigures, RunStore, check_warehouse, default_warehouse, recent_fanout,
                               sum_counts, test_hook)
from engine.traces.build import build_trace, trace_arrow_schema, trace_table_rows

__all__ = ["Outcome", "check", "choose_path", "cancelled"]

ProgressFn = Callable[[LevelFigures, int], None]
PORTABLE, ACCELERATED = "portable", "accelerated"
# A level whose Spark jobs fail (an executor lost) is computed again from the stored level this often.
LEVEL_ATTEMPTS = 3


def choose_path(spark: SparkSession, settings: Settings, stored_scheme: str | None = None,
                edges: bool = False) -> tuple[str, str]:
    """Which path runs, and why: the accelerator only in classic local mode with the engine's JVM
    helpers loaded (and for a run fingerprinted by them), the portable path everywhere else, and for
    a run that keeps the state graph's edges (liveness properties), which only the portable path writes."""
    wanted = settings.path
    if wanted == PORTABLE:
        return PORTABLE, "asked for"
    if edges:
        if wanted == ACCELERATED:
            raise UsageError("path=accelerated: liveness properties need the edges table, which only the "
                             "portable path writes")
        return PORTABLE, "liveness properties need the edges table"
    why_not = _accelerator_missing(spark, settings)
    if stored_scheme == ROW_BYTES and why_not:
        raise WarehouseError(f"this run was fingerprinted by the engine's JVM helper, which the local accelerator "
                             f"has and this session has not ({why_not}): resume it in local mode, or start it over "
                             f"with --fresh")
    if why_not:
        if wanted == ACCELERATED:
            raise UsageError(f"path=accelerated: the local accelerator cannot run here ({why_not})")
        return PORTABLE, why_not
    return ACCELERATED, "classic local mode, the engine's JVM helpers loaded"


# The PySpark line whose internals the local accelerator's hooks were written and tested against
# (private classes and signatures move between minor versions: on 4.0 two of them are missing).
ACCELERATOR_PYSPARK = "4.3."


def _accelerator_missing(spark: SparkSession, settings: Settings) -> str | None:
    if not is_classic(spark):
        return "Spark Connect"
    import pyspark
    if not pyspark.__version__.startswith(ACCELERATOR_PYSPARK):
        return (f"PySpark {pyspark.__version__}: the local accelerator's hooks into Spark's internals are "
                f"checked on PySpark {ACCELERATOR_PYSPARK}x only")
    master = spark.sparkContext.master
    if not master.startswith("local"):
        return f"master {master}"
    import engine.runtime.jvm_ext as jvm_ext
    if not jvm_ext.available(settings, spark):
        return "the engine's JVM helpers are not available"
    return None


def check(spec: RunSpec, warehouse: Path | None = None, *, settings: Settings | None = None,
          progress: ProgressFn | None = None, fresh: bool = False, spark: SparkSession | None = None) -> Outcome:
    """Check ``spec`` breadth-first, its tables in ``warehouse`` (default: the settings' warehouse, else
    warehouse/ beside the models), in ``spark`` (default: a session started with ``settings``)."""
    started = time.time()
    settings = settings or Settings()
    warehouse = check_warehouse(Path(warehouse or settings.warehouse or default_warehouse(settings)))
    if spec.invariants:
        invariants.preload()
    t_spark = time.time()
    spark = spark or get_spark(settings)
    spark_startup = time.time() - t_spark
    declare_constants(spark, spec.model, spec.constants)
    check_assumptions(spark, spec.model, spec.constants)
    cm = compile_model(spark, spec.model, settings.planning_threads)
    suite = InvariantSuite(spark, spec.model.name, cm.invariant_exprs, spec.invariants,
                           {n: str(f.path) for n, f in spec.model.invariants.items()})
    run_root = warehouse / spec.model.name / spec.run_id
    if fresh and run_root.exists():
        shutil.rmtree(run_root)
    stored = RunStore.stored_spec(run_root).get("fingerprint")
    path, why = choose_path(spark, settings, stored, edges=spec.edges)
    if path == PORTABLE:
        commit.check_visible(spark, warehouse)
    scheme = stored or (fingerprint_scheme(settings, spark) if path == ACCELERATED else JSON)
    spec = spec.with_fingerprint(scheme)
    store = RunStore(warehouse, spec.model.name, spec.run_id, cm.schema, settings)
    store.open(run_spec_json(spec), edges=spec.edges)
    partitions = spark.conf.get("spark.sql.shuffle.partitions")  # a level may raise it; restored below
    try:
        store.check_files()
        done = store.read_outcome()
        if done is not None:
            out = outcome_from_row(spec, done, store, time.time() - started)
            return _with_properties(out, spark, spec, cm, store, settings, progress, started)
        if progress is not None and hasattr(progress, "announce"):
            progress.announce(f"Search path: {path} ({why})")
        if path == ACCELERATED:
            from engine.accel.search import AcceleratedSearch
            search = AcceleratedSearch(spark, spec, cm, store, suite, progress, settings)
        else:
            search = PortableSearch(spark, spec, cm, store, suite, progress, settings)
        resume_from, totals = 0, (0, 0)
        figs = store.level_figures()
        if figs:
            store.repair_levels()
            # A level committed with a finding is derived again from the level before it.
            while figs and figs[-1].finding:
                figs.pop()
            if figs:
                resume_from = figs[-1].depth
                totals = (figs[-1].distinct_total, figs[-1].generated_total)
            search._figs = figs
        try:
            res = search.run(resume_from, totals)
        except PySparkException as exc:
            where = cm.locate_error(exc)
            if where is None:
                raise
            depth = search._figs[-1].depth + 1 if search._figs else 1
            raise ModelError(f"{where}: the model's SQL failed while computing depth {depth}: "
                             f"{str(exc).strip().splitlines()[0]}") from None
        finally:
            search.close()
        trace: list[dict[str, Any]] = []
        violated = None
        if res["result"] != "ok":
            trace = build_trace(store, res["state"], search.vars)
            violated = res.get("invariant")
        out = Outcome(
            model=spec.model.name, config=spec.config, constants=spec.constants, invariants=spec.invariants,
            deadlock_check=spec.deadlock, result=res["result"], violated_invariant=violated,
            distinct_states=res["distinct"], states_generated=res["generated"], depth=res["depth"],
            trace=trace, run_id=spec.run_id, tables={}, seconds=time.time() - started,
            resumed_from_depth=resume_from, spark_startup_seconds=spark_startup,
            fingerprint=fingerprint_note(spec.fingerprint), level_seconds=[f.seconds for f in search._figs],
            symmetry=spec.symmetry,
            terminal_findings={n: {"count": f["count"], "trace": build_trace(store, f["state"], search.vars)}
                               for n, f in search.terminal.items()},
            actions_generated=sum_counts(f.actions for f in search._figs), path=path,
        )
        store.write_outcome(outcome_row(out), trace_table_rows(trace, spec.run_id),
                            trace_arrow_schema(store.arrow_schema, search.vars))
        if trace:
            write_trace_itf(store.itf_path, trace, cm.schema, spec)
        out.tables = store.tables()
        return _with_properties(out, spark, spec, cm, store, settings, progress, started)
    finally:
        lost = sys.exc_info()[1]
        if lost is None or spark_lost(lost) is None:  # (a lost Spark would be waited for once more)
            spark.conf.set("spark.sql.shuffle.partitions", partitions)
        store.close()


def _with_properties(out: Outcome, spark: SparkSession, spec: RunSpec, cm: CompiledModel, store: RunStore,
                     settings: Settings, progress: ProgressFn | None, started: float) -> Outcome:
    """The outcome with the run's liveness properties checked over its tables (engine.search.liveness),
    after a search that found nothing (or after a stored one). The first violated property, in the
    run's order, is the outcome's result, its lasso the counterexample (written as ITF with its loop)."""
    if not spec.properties or out.result != "ok":
        return out
    from engine.search.liveness import check_properties
    out.search_seconds = out.seconds
    t0 = time.time()
    results = check_properties(spark, spec, cm, store, settings, [f.name for f in cm.schema.fields], progress)
    out.liveness_seconds = time.time() - t0
    out.properties = {r.name: r for r in results}
    out.fairness = list(spec.fairness)
    out.edges = store.edges_size()
    bad = next((r for r in results if not r.holds), None)
    if bad is not None:
        out.result = "property_violated"
        out.violated_property = bad.name
        out.trace, out.loop, out.loop_action = bad.trace, bad.loop, bad.loop_action
        if bad.trace:
            write_trace_itf(store.itf_path, bad.trace, cm.schema, spec, loop=bad.loop, loop_action=bad.loop_action,
                            property_=bad.name)
    out.seconds = time.time() - started
    out.tables = store.tables()
    return out


class PortableSearch:
    """The search on public PySpark APIs: each level a few Spark jobs, its states read back from and
    committed to the run's Delta table. A level whose new states take at most ``arrow_level_bytes`` as
    Arrow (unless ``level_path`` is spark) has them come to the driver once, already
    de-duplicated and anti-joined by Spark, and are numbered, validated and written there; a large
    level stays in Spark to the end."""

    def __init__(self, spark: SparkSession, spec: RunSpec, cm: CompiledModel, store: RunStore,
                 suite: InvariantSuite, progress: ProgressFn | None, settings: Settings):
        self.spark, self.spec, self.cm, self.store, self.suite = spark, spec, cm, store, suite
        self.progress, self.settings = progress, settings
        self.vars = [f.name for f in cm.schema.fields]
        self.fingerprinter = Fingerprinter(cm.schema, spec, settings)
        constraints = [cm.constraint_exprs[c] for c in spec.constraints]
        self.in_model = " AND ".join(constraints) if constraints else "true"
        self.base_partitions = int(spark.conf.get("spark.sql.shuffle.partitions"))
        self.terminal: dict[str, dict[str, Any]] = {}  # finding -> {"count", "state"}
        self.validations = invariants.Batches(suite)
        self._figs: list[LevelFigures] = []
        self._held: list[DataFrame] = []  # a level's checkpoints, released as it ends
        self._row_bytes = 1024.0          # a successor's size as Arrow, the last level's
        self.edges_written = 0
        self.timer = StageTimer(settings.profile)

    def close(self) -> None:
        self._release()

    def run(self, resume_from: int, totals: tuple[int, int]) -> dict[str, Any]:
        depth = resume_from
        if depth == 0:
            found = self._finish(expand.initial(self.spark, self.cm), 1, {}, None, *totals, time.time())
            if found:
                return found
            depth = 1
        while True:
            if cancelled.is_set():
                raise KeyboardInterrupt
            last = self._figs[-1]
            n_frontier = last.new_states if last.depth == depth else 0
            if n_frontier == 0:
                return self._done({"result": "ok", "depth": depth, "distinct": last.distinct_total,
                                   "generated": last.generated_total})
            found = self._level(depth, n_frontier, last.distinct_total, last.generated_total)
            if found:
                return found
            if self._figs[-1].new_states == 0:
                return self._done({"result": "ok", "depth": depth, "distinct": self._figs[-1].distinct_total,
                                   "generated": self._figs[-1].generated_total})
            depth += 1

    def _done(self, result: dict[str, Any]) -> dict[str, Any]:
        self.validations.flush()  # (every level's verdict is in before the run says ok)
        return result

    # ---- one level: the stages in order ------------------------------------------------------
    def _level(self, depth: int, n_frontier: int, distinct_total: int, generated_total: int) -> dict | None:
        """Level ``depth + 1`` from level ``depth``; computed again from the stored level when a Spark
        job failed for want of data (an executor lost with its checkpoint's blocks): nothing of the
        level is committed before its end."""
        for attempt in range(1, LEVEL_ATTEMPTS + 1):
            try:
                return self._level_once(depth, n_frontier, distinct_total, generated_total)
            except (EngineError, RuntimeError):
                raise  # (the model's input, or the engine's own check: the same again)
            except Exception as exc:  # noqa: BLE001 - Spark's errors come as several types (Py4J's in classic mode)
                if stop_requested(exc):
                    raise KeyboardInterrupt from exc
                if (isinstance(exc, PySparkException) and self.cm.locate_error(exc) is not None) \
                        or attempt == LEVEL_ATTEMPTS or spark_lost(exc) is not None:
                    raise
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                print(f"engine: depth {depth + 1} failed ({first[:300]}); computing it again from depth {depth} "
                      f"(attempt {attempt + 1} of {LEVEL_ATTEMPTS})", file=sys.stderr)
                self._release()
        raise AssertionError("unreachable")

    def _level_once(self, depth: int, n_frontier: int, distinct_total: int, generated_total: int) -> dict | None:
        t0 = time.time()
        progress = None if self.spec.edges else SliceProgress.resume(self.store, depth)
        slices = self._slices(n_frontier)
        if progress is not None or slices > 1:
            return self._sliced(depth, slices, progress, distinct_total, generated_total, t0)
        # Read once: each action's branch of the union reads the frontier (Parquet decoded and
        # filtered again for every action, without the checkpoint).
        stored = self.store_level(depth)                                                 # level k
        self.timer.mark("read")
        frontier = self._checkpoint(stored)
        self.timer.mark("frontier")
        with interpreted(self.spark, self._expected(n_frontier) <= self.settings.interpret_below):
            succ, counts, deadlocked, refetch = self._expand(frontier, depth, n_frontier)  # expand, fingerprint
            return self._finish(succ, depth + 1, counts.per_action, deadlocked, distinct_total, generated_total,
                                t0, n_gen=counts.generated, refetch=refetch)

    def _expand(self, frontier: DataFrame, depth: int,
                n_frontier: int) -> tuple[DataFrame, expand.Counts, dict | None, expand.Refetch | None]:
        """The successors of ``frontier`` (``n_frontier`` states of level ``depth``) fingerprinted and
        checkpointed, their counts, the first state of ``frontier`` without one (deadlock checked), and
        (from ``refetch_from`` successors expected) what fetches the chosen ones whole, the checkpoint then
        holding their narrow columns alone (``expand.NARROW``, and ``_in_model`` where the run keeps its
        edges); terminal findings among ``frontier`` counted."""
        made = expand.successors(self.spark, self.cm, frontier, view=f"sse_frontier_{depth}")
        # The union has a partition per action and frontier partition, each a task that deserializes
        # every action's plan; coalesced, a task runs several, in the tasks a level of this size gets.
        parts = max(self.base_partitions, -(-self._expected(n_frontier) // self.settings.rows_per_partition))
        # A large level's successors kept whole (a checkpoint of them all, written and read) cost more
        # than expanding the new ones' parents again; a small level's, less than planning that.
        again = self._expected(n_frontier) >= self.settings.refetch_from
        succ = self.fingerprinter.apply(made.coalesce(parts))
        if again:
            succ = succ.selectExpr(*expand.NARROW, *([f"({self.in_model}) AS _in_model"] if self.spec.edges else []))
        self.timer.mark("plan")
        succ, read = kept_observed(succ, self._checkpoint, expand.totals(self.cm.action_names))
        self.timer.mark("expand")
        counts = expand.count(self.cm.action_names, parents=self.spec.deadlock, moving=bool(self.cm.terminal_exprs),
                              read=read)
        self.timer.mark("counts")
        if self.cm.terminal_exprs and counts.moving_parents < n_frontier:
            self._terminal_findings(expand.without_moving_successor(frontier, succ), depth)
        deadlocked = None
        if self.spec.deadlock and counts.parents < n_frontier:
            deadlocked = expand.first_without_successor(frontier, succ)
            self.timer.mark("deadlock")
        refetch = expand.Refetch(self.spark, self.cm, self.fingerprinter.apply, frontier, f"sse_refetch_{depth}",
                                 self._checkpoint, self.settings.broadcast_rows, self.timer.mark) if again else None
        return succ, counts, deadlocked, refetch

    def _expected(self, n_frontier: int) -> int:
        """The successors ``n_frontier`` states are expected to have, at the last level's fan-out."""
        fanout = recent_fanout(self._figs)
        return int(n_frontier * max(fanout if fanout is not None else len(self.cm.action_names), 1))

    def _seen(self) -> DataFrame:
        """The fingerprints of the states stored so far, as Spark reads them from the states table."""
        return seen.fingerprints(self.spark, self.store, self.settings)

    def _slices(self, n_frontier: int) -> int:
        """How many slices the level's expansion takes (settings.slice_successors), from the last
        level's fan-out. A run that keeps its edges is not sliced."""
        if self.spec.edges:
            return 1
        return count_slices(n_frontier, self._figs, self.settings.slice_successors, len(self.cm.action_names))

    def _sliced(self, depth: int, slices: int, progress: SliceProgress | None, distinct_total: int,
                generated_total: int, t0: float) -> dict | None:
        """Level ``depth + 1`` expanded in ``slices`` ranges of level ``depth``'s ``_ord``, in order, or
        from where ``progress`` (an earlier process's) left it: the level expanded whole, with one
        slice's successors at a time (engine.accel.search's ``_sliced_level`` says why the states,
        numbers and figures are the same). Each slice's new states are those neither stored nor new
        in an earlier slice; they are numbered on from the slice before, written into a folder of
        their own and listed in the level's progress (engine.search.slices). The level is committed
        once, after the last."""
        source = self.store_level(depth)
        if progress is None:
            progress = SliceProgress.start(self.store, depth, expand.slice_bounds(source, slices))
        else:
            print(f"engine: depth {depth + 1} resumes at slice {progress.next_slice + 1} of {progress.slices}",
                  file=sys.stderr, flush=True)
        columns = [f.name for f in self.store.spark_schema.fields]
        n_gen, n_new, n_out = progress.generated, progress.new, progress.out
        per_action = progress.actions(self.cm.action_names)
        # the earlier slices' new fingerprints, kept to the level's end (an earlier process's read back)
        earlier: list[DataFrame] = []
        if progress.folders():
            earlier.append(self.spark.read.schema(self.store.spark_schema).parquet(*map(str, progress.folders()))
                           .select("_fp", "_fp2").localCheckpoint(eager=True))
        violation = None
        try:
            for i in range(progress.next_slice, progress.slices):
                part = self._checkpoint(progress.within(source, i))
                n_part = part.count()
                if n_part == 0:
                    progress.record(SliceRecord(i, None, 0, 0, 0, 0))
                    continue
                succ, counts, deadlocked, refetch = self._expand(part, depth, n_part)
                n_gen += counts.generated
                for a, n in counts.per_action.items():
                    per_action[a] += n
                self.spark.conf.set("spark.sql.shuffle.partitions", str(
                    max(self.base_partitions, -(-counts.generated // self.settings.rows_per_partition))))
                new, n_picked = dedupe.first_per_state(succ, self._checkpoint, self.settings.broadcast_rows,
                                                       functools.reduce(DataFrame.unionAll, earlier, self._seen()),
                                                       fetch=refetch)
                level, got_new, got_out, failing = self._numbered(new, depth + 1, False, n_picked, refetch,
                                                                  base=n_new + n_out)
                if failing:
                    report = self.validations.now(level)
                    if report.success:
                        raise RuntimeError(f"the invariant suite passed depth {depth + 1}, where {failing} fail: "
                                           "report it")
                    violation = invariants.first_violation(level, report.failed, self.spec.invariants)
                else:
                    self.validations.later(level, depth + 1)
                if deadlocked is not None and (violation is None
                                               or deadlocked["_ord"] < violation[0]["_parent_ord"]):
                    self.validations.flush()
                    progress.clear()
                    return {"result": "deadlock", "depth": depth, "state": deadlocked, "distinct": distinct_total,
                            "generated": generated_total + n_gen}
                folder = progress.new_folder(i) if got_new else None
                if folder is not None:
                    level.where("_in_model").select(*columns).write.option("compression", "zstd").parquet(str(folder))
                # (listed once its suite's verdict is in: a resumed level does not validate it again)
                self.validations.flush()
                progress.record(SliceRecord(i, folder.name if folder else None, n_part, counts.generated,
                                            got_new, got_out, counts.per_action), listed=violation is None)
                n_new, n_out = n_new + got_new, n_out + got_out
                print(expand.slice_line(depth + 1, i, progress.slices, n_part, counts.generated, got_new,
                                        time.time() - t0), file=sys.stderr, flush=True)
                self.timer.mark("slice")
                self.timer.flush(depth + 1)
                test_hook(self.settings, f"after-slice-{i}", depth + 1)
                if violation is not None:
                    break
                earlier.append(level.select("_fp", "_fp2").localCheckpoint(eager=True))
                self._release()
        finally:
            self._release()
            for fps in earlier:
                fps.unpersist()
        fig = LevelFigures(depth + 1, n_gen, n_new, n_out, distinct_total + n_new, generated_total + n_gen,
                           round(time.time() - t0, 3), finding=violation[1] if violation else None,
                           actions=per_action)
        if n_new or violation:
            self.store.commit_level(fig, progress.folders())
        progress.clear()
        self._figs.append(fig)
        if self.progress:
            self.progress(fig, n_new)
        if violation:
            self.validations.flush()
            return {"result": "invariant_violated", "invariant": violation[1], "depth": depth + 1,
                    "state": violation[0], "distinct": fig.distinct_total, "generated": fig.generated_total}
        return None

    def _finish(self, succ: DataFrame, depth: int, per_action: dict[str, int], deadlocked: dict | None,
                distinct_total: int, generated_total: int, t0: float, n_gen: int | None = None,
                refetch: expand.Refetch | None = None) -> dict | None:
        """Level ``depth`` from its successors ``succ`` (whole, or narrow ones that ``refetch`` fetches
        whole once chosen): one row per state, the unseen ones, their constraint and invariant columns,
        in TLC's order, numbered, written and committed."""
        if n_gen is None:  # the initial states: the only action is Init
            succ = self._checkpoint(self.fingerprinter.apply(succ))
            n_gen = succ.count()
            per_action = {"Init": n_gen}
        self.spark.conf.set("spark.sql.shuffle.partitions",
                            str(max(self.base_partitions, -(-n_gen // self.settings.rows_per_partition))))
        new, n_picked = dedupe.first_per_state(succ, self._checkpoint, self.settings.broadcast_rows,  # dedupe,
                                               self._seen() if depth > 1 else None, fetch=refetch,  # anti-join
                                               mark=self.timer.mark)
        self.timer.mark("dedupe")
        # What the driver would hold is the level's new states, counted by now (not its successors).
        on_driver = (self.settings.level_path != "spark"
                     and n_picked * self._row_bytes <= self.settings.arrow_level_bytes)
        level, n_new, n_out, failing = self._numbered(new, depth, on_driver, n_picked, refetch)  # order, number
        self.timer.mark("order")
        violation = None
        if failing:
            report = self.validations.now(level)                                         # the suite's verdict
            if report.success:
                raise RuntimeError(f"the invariant suite passed depth {depth}, where {failing} fail: report it")
            violation = invariants.first_violation(level, report.failed, self.spec.invariants)
        else:
            self.validations.later(level, depth)
        self.timer.mark("gx")
        if deadlocked is not None and (violation is None or deadlocked["_ord"] < violation[0]["_parent_ord"]):
            # TLC meets the deadlocked parent before a violating successor of a later parent.
            self.validations.flush()
            self._release()
            return {"result": "deadlock", "depth": depth - 1, "state": deadlocked, "distinct": distinct_total,
                    "generated": generated_total + n_gen}
        if self.spec.edges and depth > 1:                                                 # the level's edges
            self.edges_written += self._commit_edges(succ, depth, on_driver)
        folder = commit.write(level, self.store, depth) if n_new else None              # commit
        self.timer.mark("write")
        fig = LevelFigures(depth, n_gen, n_new, n_out, distinct_total + n_new, generated_total + n_gen,
                           round(time.time() - t0, 3), finding=violation[1] if violation else None,
                           actions={a: int(n or 0) for a, n in per_action.items()})
        if n_new or violation:
            self.store.commit_level(fig, folder)
        self._figs.append(fig)
        self._release()
        self.timer.mark("commit")
        self.timer.flush(depth)
        if self.progress:
            self.progress(fig, n_new)
        if violation:
            self.validations.flush()
            return {"result": "invariant_violated", "invariant": violation[1], "depth": depth,
                    "state": violation[0], "distinct": fig.distinct_total, "generated": fig.generated_total}
        return None

    def _numbered(self, new: DataFrame, depth: int, on_driver: bool, n_picked: int, refetch: expand.Refetch | None,
                  base: int = 0) -> tuple[DataFrame | Any, int, int, dict[str, int]]:
        """The level's new states with their constraint and invariant columns (invariants), in TLC's order
        and numbered from ``base``: as Arrow on the driver, or a Spark checkpoint. With the counts
        ``commit.tally`` gives. States fetched by ``refetch`` that outnumber those chosen (a key that
        names several successors) are fetched again, matched on the fingerprint too."""
        for exact in (False, True):
            annotated = invariants.annotate(new, self.suite, self.in_model)             # invariants
            if on_driver:
                self.timer.mark("annotate")
                rows = annotated.toArrow()
                self.timer.mark("to_driver")
                level = commit.numbered_on_driver(rows, depth)
                if level.num_rows:
                    self._row_bytes = max(64.0, level.get_total_buffer_size() / level.num_rows)
                n_new, n_out, failing = commit.tally_arrow(level, self.suite)
            else:
                level = commit.in_tlc_order(annotated, depth, self._checkpoint, base=base)
                n_new, n_out, failing = commit.tally(level, self.suite)
            if refetch is None or n_new + n_out == n_picked:
                return level, n_new, n_out, failing
            if exact:
                raise RuntimeError(f"depth {depth}: {n_picked} new states chosen, {n_new + n_out} fetched again "
                                   "by key and fingerprint: report it")
            new = refetch.exact()
        raise AssertionError("unreachable")

    def _commit_edges(self, succ: DataFrame, depth: int, on_driver: bool) -> int:
        """The edges from level ``depth - 1`` (each successor within the constraint, once per parent, state
        and action), committed to the edges table before the level's states: a level committed is never
        without its edges, and a level computed again after a crash commits none twice."""
        edges = (succ.where("_in_model" if "_in_model" in succ.columns else self.in_model)
                 .select(F.col("_parent_fp").alias("_from_fp"), F.col("_parent_fp2").alias("_from_fp2"),
                         F.col("_fp").alias("_to_fp"), F.col("_fp2").alias("_to_fp2"), "_action")
                 .distinct())
        if on_driver:
            folder = self.store.write_edges(depth, edges.toArrow())
        else:
            folder = self.store.edges_attempt_dir(depth)
            edges.write.mode("overwrite").option("compression", "zstd").parquet(str(folder))
        return self.store.commit_edges(depth, folder)

    def store_level(self, depth: int) -> DataFrame:
        """The stored states of level ``depth``, as Spark reads them from the run's Delta table."""
        return seen.stored(self.spark, self.store, self.settings, depth=depth)

    def _terminal_findings(self, terminal: DataFrame, depth: int) -> None:
        """States without a successor that moves (they stutter for ever) where a finding holds: counted,
        the first (in breadth-first order, so with a shortest path) kept as the example."""
        for name, (n, state) in expand.terminal_findings(terminal, self.cm.terminal_exprs).items():
            found = self.terminal.setdefault(name, {"count": 0, "state": None})
            found["count"] += n
            if found["state"] is None:
                found["state"] = state

    def _checkpoint(self, df: DataFrame) -> DataFrame:
        """``df`` computed once and kept for the rest of the level (Spark's local checkpoint: on the
        executors, in memory and on disk), its plan cut: the level's other jobs read the rows, not
        the actions' queries again (through Spark Connect they would be analyzed again each job). A
        level whose checkpoint an executor took with it fails, and the run resumes from the level
        before it."""
        kept = df.localCheckpoint(eager=True)
        self._held.append(kept)
        return kept

    def _release(self) -> None:
        for df in self._held:
            try:
                df.unpersist()
            except Exception as exc:  # noqa: BLE001 - a session that is gone: nothing left to free
                print(f"engine: could not release a level's checkpoint ({exc})", file=sys.stderr)
        self._held = []
