"""What planning the actions' union costs, its branches' code generated on one thread or on several.

    python pipelines/plan_union.py MODEL [--config CONFIG] [--repeat 3] [--threads 2] [--models DIR]

The union of every action (the successors query of a level) is built over the model's initial
states in two partitions, and made into the engine's union by part (``engine.search.expand.union_by_part``,
what a held plan is made of) ``--repeat`` times each way: the branches' code generated one branch
after the other (``SSE_PLANNING_THREADS=1``, as Spark's ``UnionExec`` does) and on ``--threads``
threads, one way first in odd repetitions and the other in even ones. Each repetition is a fresh
query (parsed, analyzed, optimized, planned and its Java source written), as when the search plans
its union. Printed: the seconds each way, each repetition, and whether both gave the same
successors. The first plan of a process is the cold one a command line pays (the JIT has not
compiled Spark's planner yet).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import engine.search.expand as expand  # noqa: E402
from engine.model.loader import load_model, resolve_run  # noqa: E402
from engine.runtime.session import checkpoint, declare_constants, get_spark  # noqa: E402


def initial_frontier(spark, name: str, config: str | None, models: Path | None, parts: int | None = None):
    """The model, its run, its actions compiled in ``spark``'s session with the run's constants, and
    its initial states as the actions' ``frontier`` (checkpointed; in ``parts`` partitions if given)."""
    model = load_model(name, models)
    spec = resolve_run(model, config)
    declare_constants(spark, model, spec.constants)
    cm = expand.compile_model(spark, model)
    init = (cm.init(spark).drop("_key", "_action")
            .selectExpr("*", "named_struct('fp', 0L, 'fp2', 0L, 'ord', 0L) AS _parent"))
    return model, spec, cm, checkpoint(init.repartition(parts) if parts else init)


def main(argv: list[str] | None = None, spark=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model")
    p.add_argument("--config", default=None)
    p.add_argument("--models", type=Path, default=None, help="a folder with schemas/ and actions_sql/ (default: this checkout)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args(argv)
    if args.repeat < 1 or args.threads < 2:
        p.error("--repeat must be at least 1 and --threads at least 2")

    spark = spark or get_spark()
    model, spec, cm, frontier = initial_frontier(spark, args.model, args.config, args.models, parts=2)
    print(f"{model.name} ({spec.config}): {len(model.actions)} actions, their union over the initial states "
          f"in 2 partitions, planned by part")
    before = os.environ.get("SSE_PLANNING_THREADS")
    rows = {}
    try:
        for rep in range(1, args.repeat + 1):
            took = {}
            # Alternating which goes first: the first plan of a process is the coldest.
            for threads in ((1, args.threads) if rep % 2 else (args.threads, 1)):
                os.environ["SSE_PLANNING_THREADS"] = str(threads)
                t = time.perf_counter()
                by_part = expand.union_by_part(spark, cm.successors(spark, frontier))
                took[threads] = time.perf_counter() - t
                if by_part is None:
                    print("the union does not run by part (an action shuffles): nothing to compare", file=sys.stderr)
                    return 1
                if rep == 1:
                    rows[threads] = sorted(r[0] for r in by_part.selectExpr("to_json(struct(*))").collect())
            print(f"  repetition {rep}: one branch after the other {took[1]:.2f} s, "
                  f"on {args.threads} threads {took[args.threads]:.2f} s", flush=True)
    finally:
        if before is None:
            os.environ.pop("SSE_PLANNING_THREADS", None)
        else:
            os.environ["SSE_PLANNING_THREADS"] = before
    same = rows[1] == rows[args.threads]
    print(f"successors: {len(rows[1])} one way, {len(rows[args.threads])} the other, "
          f"{'the same' if same else 'DIFFERENT'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
