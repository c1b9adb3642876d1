"""Each action's largest generated method, against the limit above which Spark runs it operator by operator.

    python pipelines/method_sizes.py MODEL [--config CONFIG] [--models DIR]

Spark compiles each stage of an action's plan (its operators fused, ``WholeStageCodegenExec``) into
Java bytecode. HotSpot never compiles a method of over 8,000 bytes of bytecode to machine code, so
the engine's session sets ``spark.sql.codegen.hugeMethodLimit`` to 8,000: above it Spark runs the
stage operator by operator instead (the generator interpreted, each operator's projection generated
anew in every task, every row copied between operators). ``bk_v413_rrf`` ran 7 of its 25 actions
that way until 2026-11-28 (README, Writing a model: where a stage is split).

Each action's branch of the actions' union is planned over the model's initial states (the plan's
leaf is not the search's, which reads the frontier through a leaf of its own: a few hundred bytes
of difference), and its stages' code generated and compiled (Janino; Spark caches the classes by
their source). An action Spark's optimizer proves has no successors under the constants has no
stage. Printed, for each action in Next's order: its stages, the largest method
of each, in bytes of bytecode, and OVER where one is above the session's limit. Exit status 1 when
an action is over it, 2 for a model or configuration it cannot compile (the error on stderr).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "pipelines"))

from engine.errors import EngineError  # noqa: E402
from engine.runtime.session import get_spark  # noqa: E402
from plan_union import initial_frontier  # noqa: E402


def stages(plan) -> list:
    """The whole-stage code generation nodes of a physical plan, outermost first."""
    if plan.getClass().getSimpleName() == "WholeStageCodegenExec":
        found = [plan]
    else:
        found = []
    children = plan.children()
    for i in range(children.size()):
        found.extend(stages(children.apply(i)))
    return found


def largest_methods(spark, df) -> list[int]:
    """The largest method of each generated stage of ``df``'s plan, in bytes of bytecode."""
    compiler = spark._jvm.org.apache.spark.sql.catalyst.expressions.codegen.CodeGenerator
    return [int(compiler.compile(stage.doCodeGen()._2())._2().maxMethodCodeSize())
            for stage in stages(df._jdf.queryExecution().executedPlan())]


def main(argv: list[str] | None = None, spark=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model")
    p.add_argument("--config", default=None)
    p.add_argument("--models", type=Path, default=None, help="a folder with schemas/ and actions_sql/ (default: this checkout)")
    args = p.parse_args(argv)

    spark = spark or get_spark()
    try:
        model, spec, cm, frontier = initial_frontier(spark, args.model, args.config, args.models)
    except EngineError as exc:  # an unknown model or configuration, a model file Spark refuses
        print(f"method_sizes: {exc}", file=sys.stderr)
        return 2
    limit = int(spark.conf.get("spark.sql.codegen.hugeMethodLimit"))
    frontier.createOrReplaceTempView("frontier")
    # Each action's branch of the union on its own: Spark's optimizer drops a branch it proves empty
    # from the union's plan (pulsar_compaction's, with these constants), so the union's children
    # need not be the actions.
    sizes = [largest_methods(spark, spark.sql(cm.successors_sql[lo:hi])) for lo, hi, _, _ in cm.spans]
    print(f"{model.name} ({spec.config}): each action's generated stages, their largest method in bytes "
          f"(the session's limit: {limit:,})")
    over = []
    for f, methods in zip(model.actions, sizes):
        mark = "  OVER" if max(methods, default=0) > limit else ""
        if mark:
            over.append(f.name)
        print(f"  {f.name:<40} {', '.join(f'{m:,}' for m in methods)}{mark}")
    print(f"{len(over)} of {len(model.actions)} actions over the limit{': ' + ', '.join(over) if over else ''}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
