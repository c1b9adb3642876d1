"""Where a small level's fixed cost goes: plan and run one model's action union over its initial states.

    python pipelines/profile_level.py MODEL [--config CONFIG] [--repeat 3] [--tasks N] [--models DIR]

The successors query of every action (the union the search runs each level) is built over the
model's initial states, written as one Parquet file like a level of the search, and run ``--repeat``
times with a fresh plan each time, as the search does. For each repetition it prints the wall time
of building the query and of Catalyst's phases (Spark's own planning tracker: parsing, analysis,
optimization, physical planning), the time to run it (``localCheckpoint``, as the search does), how
many classes Spark compiled (Janino, from ``CodegenMetrics``) and in how many milliseconds, how many
sources' classes it defined from disk instead (engine.runtime.session's code cache), and the
Spark jobs, stages and tasks it took. The first repetition pays for the first compilation; the
others show the cost every later level pays. ``--tasks N`` coalesces the union to N tasks, as the
search does for small levels (``engine.search.loop.SMALL_FRONTIER``); 0 keeps a task per partition.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.search.expand import compile_model  # noqa: E402
from engine.model.loader import load_model, resolve_run  # noqa: E402
from engine.runtime.session import code_cache_counts, declare_constants, get_spark  # noqa: E402


def _compiles(spark) -> tuple[int, int]:
    h = spark._jvm.org.apache.spark.metrics.source.CodegenMetrics.METRIC_COMPILATION_TIME()
    return int(h.getCount()), int(sum(h.getSnapshot().getValues()))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model")
    p.add_argument("--config", default=None)
    p.add_argument("--models", type=Path, default=None, help="a folder with schemas/ and actions_sql/ (default: this checkout)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--tasks", type=int, default=None,
                   help="coalesce the union to N tasks (default: the cores, as the search does; 0: do not)")
    args = p.parse_args(argv)

    spark = get_spark()
    model = load_model(args.model, args.models)
    spec = resolve_run(model, args.config)
    declare_constants(spark, model, spec.constants)
    cm = compile_model(spark, model)
    tasks = spark.sparkContext.defaultParallelism if args.tasks is None else args.tasks
    st = spark.sparkContext.statusTracker()
    with tempfile.TemporaryDirectory() as tmp:
        level = str(Path(tmp) / "level")
        (cm.init(spark).drop("_key", "_action")
         .selectExpr("*", "named_struct('fp', 0L, 'fp2', 0L, 'ord', 0L) AS _parent")
         .coalesce(1).write.parquet(level))
        print(f"{model.name} ({spec.config}): {len(model.actions)} actions, union over the initial states, "
              f"{'a task per partition' if not tasks else f'{tasks} tasks'}")
        for rep in range(1, args.repeat + 1):
            c0, k0 = _compiles(spark), code_cache_counts(spark)
            j0 = max(st.getJobIdsForGroup(None) or [-1])
            t0 = time.time()
            base = cm.successors(spark, spark.read.parquet(level))  # parsed and analyzed here
            df = base.coalesce(tasks) if tasks else base
            qe = df._jdf.queryExecution()
            qe.executedPlan()  # optimized and planned here
            t1 = time.time()
            rows = df.localCheckpoint(eager=True).count()
            t2 = time.time()
            phases: dict[str, float] = {}
            for q in {id(base): base, id(df): df}.values():  # the coalesce is a Dataset of its own
                it = q._jdf.queryExecution().tracker().phases().iterator()
                while it.hasNext():
                    kv = it.next()
                    phases[kv._1()] = phases.get(kv._1(), 0) + kv._2().durationMs() / 1000
            c1, k1 = _compiles(spark), code_cache_counts(spark)
            from_disk = f", {k1['hits'] - k0['hits']} from disk (the code cache)" if k0 and k1 else ""
            jobs = [j for j in st.getJobIdsForGroup(None) if j > j0]
            stages = [s for j in jobs if st.getJobInfo(j) for s in st.getJobInfo(j).stageIds]
            n_tasks = sum(st.getStageInfo(s).numTasks for s in stages if st.getStageInfo(s))
            print(f"repeat {rep}: plan {t1 - t0:.2f} s (parsing {phases.get('parsing', 0):.2f}, "
                  f"analysis {phases.get('analysis', 0):.2f}, optimization {phases.get('optimization', 0):.2f}, "
                  f"planning {phases.get('planning', 0):.2f}), run {t2 - t1:.2f} s, {rows} successors; "
                  f"compiled {c1[0] - c0[0]} classes in {(c1[1] - c0[1]) / 1000:.2f} s{from_disk}; "
                  f"{len(jobs)} jobs, {len(stages)} stages, {n_tasks} tasks", flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
