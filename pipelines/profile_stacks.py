"""Where a large level's time goes: the JVM's executor threads sampled with jstack while one stored
level of a run is expanded again.

    python pipelines/profile_stacks.py RUN_DIR DEPTH [--repeat 2] [--interval 0.2] [--top 15]
                                       [--stage actions|expand|annotate] [--models DIR]

RUN_DIR is a run's folder (``warehouse/<model>/<run_id>``, with its ``run.json``); DEPTH one of its
stored levels. The level is read into Spark and checkpointed, then each repetition runs what the
search runs over it, to the end but without keeping the result (Spark's ``noop`` writer):
``actions`` the actions' union alone, ``expand`` that and every successor's fingerprint
(canonical with symmetry), ``annotate`` that plus the state constraint and the invariants. The first repetition compiles; the
samples come from the later ones. While they run, a thread calls ``jstack`` on the JVM every
``--interval`` seconds and keeps the stacks of Spark's task threads that are running.

Printed: the wall time of each repetition; the share of task samples in which each kind of work is
on the stack (Java deserialization, serialized checkpoint reads, code generated inside tasks;
higher-order functions with lambdas; the fingerprint's JSON text and hash; array sorting; the generator of the actions' ``LATERAL VIEW``; Spark's projections and
row copies; Parquet and Arrow I/O; shuffle and sort), a sample counting once for each kind it shows;
and the most frequent innermost frames.
"""
from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pyspark.sql import functions as F  # noqa: E402

from engine.search.expand import compile_model  # noqa: E402
from engine.search.fingerprint import fingerprint_sql  # noqa: E402
from engine.search.invariants import InvariantSuite  # noqa: E402
from engine.model.loader import load_model, resolve_run  # noqa: E402
from engine.runtime.session import declare_constants, get_spark  # noqa: E402
from engine.store.runs import RunStore  # noqa: E402
from engine.search.symmetry import canonical_fingerprint_stages  # noqa: E402

# What a frame's text says about the work it does, first match wins (checked innermost first).
KINDS = [
    ("Java deserialization (a task's plan; serialized checkpoints)", re.compile(r"java\.io\.ObjectInputStream")),
    ("serialized checkpoint rows read (UnsafeRow.readExternal)", re.compile(r"UnsafeRow\.readExternal")),
    ("code generated in tasks (projections outside whole-stage code)",
     re.compile(r"codegen\.CodeGenerator|CodegenContext|GenerateUnsafeProjection|GeneratePredicate|janino")),
    ("higher-order functions (lambdas; generated code since Spark 4.3)", re.compile(r"HigherOrderFunction|LambdaFunction|NamedLambdaVariable|ArrayTransform|ArrayFilter|ArrayExists|ArrayAggregate|ArrayForAll")),
    ("fingerprint: JSON text", re.compile(r"StructsToJson|JacksonGenerator")),
    ("fingerprint: row bytes", re.compile(r"sse\.RowBytes")),
    ("JSON reading (the held union's frontier)", re.compile(r"JacksonParser|JsonFileFormat|JsonDataSource")),
    ("fingerprint: xxhash64", re.compile(r"XXH64|XxHash64")),
    ("array sorting", re.compile(r"SortArray|ArraySort|TimSort|ArrayData\.sort")),
    ("generator (LATERAL VIEW posexplode)", re.compile(r"GenerateExec|PosExplode|Explode")),
    ("seen set (sse_seen)", re.compile(r"sse\.SeenSet")),
    ("Arrow reading (the held union's frontier)",
     re.compile(r"sse\.ArrowFrontier|fromIPCStream|InternalRowIteratorFromIPCStream|ArrowColumnVector|PortableDataStream")),
    ("Arrow conversion", re.compile(r"arrow\.")),
    ("Parquet", re.compile(r"parquet")),
    ("shuffle and sort", re.compile(r"ShuffleWriter|ShuffleBlockFetcher|UnsafeExternalSorter|UnsafeSorter|ExternalSorter")),
    ("projection and row copy (generated code)", re.compile(r"GeneratedClass|UnsafeRow|UnsafeProjection|UnsafeArrayData|Platform\.copyMemory")),
]
IDLE = ("socketRead", "Unsafe.park", "Object.wait", "Thread.sleep", "epollWait", "EPoll.wait")


def sample_stacks(pid: int, interval: float, stop: threading.Event, out: list[list[str]]) -> None:
    """Append the frames of each running task thread, innermost first, every ``interval`` seconds."""
    while not stop.is_set():
        try:
            dump = subprocess.run(["jstack", str(pid)], capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.TimeoutExpired):
            return
        for block in dump.split("\n\n"):
            head = block.splitlines()[0] if block.strip() else ""
            if "Executor task launch worker" not in head or "State: RUNNABLE" not in block:
                continue
            frames = [ln.strip()[3:] for ln in block.splitlines() if ln.strip().startswith("at ")]
            if frames and not any(x in frames[0] for x in IDLE):
                out.append(frames)
        stop.wait(interval)


def summarize(samples: list[list[str]], top: int) -> str:
    kinds: collections.Counter[str] = collections.Counter()
    leaves: collections.Counter[str] = collections.Counter()
    for frames in samples:
        leaves[frames[0].split("(")[0]] += 1
        shown = set()
        for frame in frames:
            for name, rx in KINDS:
                if name not in shown and rx.search(frame):
                    shown.add(name)
        kinds.update(shown)
    n = max(len(samples), 1)
    lines = [f"{len(samples)} task samples; share of samples in which each kind of work is on the stack:"]
    lines += [f"  {100 * c / n:5.1f} %  {name}" for name, c in kinds.most_common()]
    lines.append(f"most frequent innermost frames:")
    lines += [f"  {100 * c / n:5.1f} %  {frame}" for frame, c in leaves.most_common(top)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run_dir", type=Path)
    p.add_argument("depth", type=int)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--interval", type=float, default=0.2)
    p.add_argument("--top", type=int, default=15)
    p.add_argument("--stage", choices=["actions", "expand", "annotate"], default="expand")
    p.add_argument("--models", type=Path, default=None, help="a folder with schemas/ and actions_sql/ (default: this checkout)")
    args = p.parse_args(argv)

    run = json.loads((args.run_dir / "run.json").read_text())
    model = load_model(run["model"], args.models)
    spec = dataclasses.replace(resolve_run(model, run["config"], symmetry=run.get("symmetry")),
                               constants=run["constants"])
    spark = get_spark()
    declare_constants(spark, model, spec.constants)
    cm = compile_model(spark, model)
    store = RunStore(args.run_dir.parent.parent, model.name, run["run_id"], cm.schema)
    store._load_files()
    files = store.level_files(args.depth)
    if not files:
        print(f"{args.run_dir}: no stored level {args.depth}", file=sys.stderr)
        return 2
    names = [f"`{f.name}`" for f in cm.schema.fields]
    level = (spark.read.schema(store.spark_schema).parquet(*files)
             .selectExpr(*names, "named_struct('fp', _fp, 'fp2', _fp2, 'ord', _ord) AS _parent")
             .localCheckpoint(eager=True))
    n_frontier = level.count()
    if spec.symmetry:
        stages = canonical_fingerprint_stages(cm.schema, model.symmetry_shapes,
                                              {s: spec.constants[s] for s in model.symmetry})
    else:
        fp1, fp2 = fingerprint_sql([(f.name, f.dataType) for f in cm.schema.fields])
        stages = [[f"{fp1} AS _fp", f"{fp2} AS _fp2"]]
    suite = InvariantSuite(spark, model.name, cm.invariant_exprs, spec.invariants)
    in_model = " AND ".join(cm.constraint_exprs[c] for c in spec.constraints) or "true"
    pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())
    print(f"{model.name} ({spec.config}), level {args.depth}: {n_frontier} states, {len(model.actions)} actions, "
          f"stage {args.stage}", flush=True)
    samples: list[list[str]] = []
    for rep in range(1, args.repeat + 1):
        df = cm.successors(spark, level)
        if spec.symmetry and args.stage != "actions":
            df = df.localCheckpoint(eager=True)  # as the search does before canonicalizing
        for stage in stages if args.stage != "actions" else []:
            df = df.selectExpr("*", *stage)
        if args.stage == "annotate":
            df = suite.with_columns(df.withColumn("_in_model", F.expr(in_model)))
        stop = threading.Event()
        sampler = threading.Thread(target=sample_stacks, args=(pid, args.interval, stop, samples), daemon=True)
        if rep > 1:
            sampler.start()
        t0 = time.time()
        df.write.format("noop").mode("overwrite").save()
        print(f"repeat {rep}: {time.time() - t0:.2f} s", flush=True)
        stop.set()
        if rep > 1:
            sampler.join()
    print(summarize(samples, args.top))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
