"""What a fingerprint costs in each scheme, over a run's stored states.

    python pipelines/fingerprint_cost.py RUN_DIR [--repeat 3]

RUN_DIR is a run's folder (``warehouse/<model>/<run_id>``). Its states (the model's variables only)
are read once and cached in memory; then each repetition computes both halves of every state's
fingerprint in each scheme (engine.search.fingerprint: ``row-bytes``, ``json``), and, as the floor, reads
the cached states without hashing them (counting each row's variables as one struct).
Printed per repetition: the seconds of each, and the distinct fingerprints each scheme found (the
number of states: a scheme that found fewer would have confused two states).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import engine.search.fingerprint as fingerprint  # noqa: E402
from engine.runtime.session import get_spark  # noqa: E402
from engine.store.runs import ENGINE_COLUMNS  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run_dir", type=Path)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args(argv)
    if not (args.run_dir / "run.json").is_file():
        print(f"{args.run_dir}: not a run's folder (no run.json)", file=sys.stderr)
        return 2
    run = json.loads((args.run_dir / "run.json").read_text())
    spark = get_spark()
    engine_cols = {f.name for f in ENGINE_COLUMNS}
    stored = spark.read.parquet(str(args.run_dir / "states" / "depth-*"))
    cols = [f for f in stored.schema.fields if f.name not in engine_cols]
    states = stored.select(*[f"`{c.name}`" for c in cols]).repartition(spark.sparkContext.defaultParallelism).cache()
    n = states.count()
    print(f"{run['model']} ({run['config']}): {n:,} stored states, {len(cols)} variables")
    schemes = {s: fingerprint.fingerprint_sql([(c.name, c.dataType) for c in cols], using=s)
               for s in (fingerprint.ROW_BYTES, fingerprint.JSON)}
    for rep in range(1, args.repeat + 1):
        figures = []
        for name, (a, b) in schemes.items():
            t = time.time()
            hashed = states.selectExpr(f"{a} AS f1", f"{b} AS f2")
            hashed.selectExpr("sum(f1 % 1000)", "sum(f2 % 1000)").collect()  # every row hashed
            seconds = time.time() - t
            distinct = hashed.selectExpr("count(DISTINCT f1, f2)").first()[0]
            figures.append(f"{name} {seconds:.2f} s ({distinct:,} distinct)")
        t = time.time()
        every = ", ".join(f"'{c.name}', `{c.name}`" for c in cols)
        states.selectExpr(f"count(named_struct({every}))").collect()  # reads every column of every row
        figures.append(f"no fingerprint {time.time() - t:.2f} s")
        print(f"repeat {rep}: " + ", ".join(figures))
    states.unpersist()
    return 0


if __name__ == "__main__":
    sys.exit(main())
