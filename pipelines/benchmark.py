"""Benchmark a model check: wall time, Spark start-up, throughput and per-level fixed cost.

    python pipelines/benchmark.py ledger_chaining [--config NAME] [--set CONST=VALUE ...]

The fixed cost per level is the median time of the levels that generated fewer than
--small states (their time is the engine's overhead, not work on states).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.checker import check  # noqa: E402
from engine.model import load_model, resolve_run  # noqa: E402
from engine.session import get_spark  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", nargs="?", default="ledger_chaining")
    p.add_argument("--config")
    p.add_argument("--set", dest="sets", action="append", default=[])
    p.add_argument("--no-deadlock", action="store_true")
    p.add_argument("--small", type=int, default=1000, help="levels below this many generated states count as fixed cost")
    p.add_argument("--master", default=None)
    args = p.parse_args()

    t0 = time.time()
    spark = get_spark(args.master)
    startup = time.time() - t0
    spec = resolve_run(load_model(args.model), args.config, args.sets, None, False if args.no_deadlock else None)
    with tempfile.TemporaryDirectory() as wh:
        t1 = time.time()
        out = check(spec, Path(wh), spark=spark)
        search = time.time() - t1
        from deltalake import DeltaTable
        levels = DeltaTable(out.tables["levels"]).to_pyarrow_table().to_pylist()
    small = [r["seconds"] for r in levels if r["generated"] < args.small]
    every = [r["seconds"] for r in levels]
    wall = time.time() - t0
    print(f"model              {spec.model.name} ({spec.config}) {spec.constants}")
    print(f"result             {out.result}: {out.distinct_states:,} distinct, {out.states_generated:,} generated, depth {out.depth}")
    print(f"wall time          {wall:.1f} s (Spark start-up {startup:.1f} s, search {search:.1f} s)")
    print(f"distinct states/s  {out.distinct_states / search:,.0f}")
    print(f"generated/s        {out.states_generated / search:,.0f}")
    if small:
        print(f"fixed cost/level   median {statistics.median(small):.3f} s, worst {max(small):.3f} s "
              f"over {len(small)} levels with < {args.small} states generated")
    print(f"level time         median {statistics.median(every):.3f} s, total {sum(every):.1f} s over {len(every)} levels")
    return 0


if __name__ == "__main__":
    sys.exit(main())
