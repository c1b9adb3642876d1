"""How the anti-join's cost per state grows with the table of seen states.

    python pipelines/antijoin_scaling.py [--seen 100000,1000000,10000000] [--candidates 500000]
                                         [--repeat 3] [--no-record]

For each size of the seen table it writes that many fingerprints as Parquet files, as the search's
levels are stored (a file per million rows), and times the search's own anti-joins (``engine.search.seen``:
``plain_unseen`` and ``SeenIndex.unseen``) of a level of ``--candidates`` de-duplicated successors
against them, read the way the search reads them (``RunStore.all_files``: a file list, the two fingerprint
columns). Half of the candidates are in the seen table, half are new. The candidates are hash
partitioned by fingerprint with the search's partition count (``ROWS_PER_PARTITION``), as the
de-duplication leaves them.

It prints, per size: the median time of ``--repeat`` runs, the time per candidate state, the
per-state cost relative to the smallest table (issue 7's target: within 2x at 10 million), and the
physical join Spark chose. The figures are appended to the Delta table
``<warehouse>/_antijoin_scaling`` unless ``--no-record``.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pyspark.sql import functions as F  # noqa: E402

from engine.search.loop import ROWS_PER_PARTITION  # noqa: E402
from engine.search.seen import SeenIndex, plain_unseen  # noqa: E402
from engine.runtime.session import get_spark  # noqa: E402
from pipelines.benchmark import record  # noqa: E402

FILE_ROWS = 1_000_000


def _fingerprints(spark, start: int, end: int):
    ids = spark.range(start, end)
    return ids.select(F.xxhash64("id", F.lit(1)).alias("_fp"), F.xxhash64("id", F.lit(2)).alias("_fp2"))


def _join_kind(df, index=None) -> str:
    if index is not None and index.sorted:
        return "sorted runs"  # engine/runtime/jvm/SortedSeen.java: no join in Spark's plan
    plan = df._jdf.queryExecution().executedPlan().toString()
    for kind in ("BroadcastHashJoin", "SortMergeJoin", "ShuffledHashJoin", "BroadcastNestedLoopJoin"):
        if kind in plan:
            return kind
    return "?"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seen", default="100000,1000000,10000000", help="sizes of the seen table, comma separated")
    p.add_argument("--candidates", type=int, default=500_000, help="de-duplicated successors of the level")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--master", default=None)
    p.add_argument("--warehouse", type=Path, default=ROOT / "warehouse")
    p.add_argument("--no-record", action="store_true")
    p.add_argument("--mode", choices=["index", "plain", "both"], default="both",
                   help="the search's anti-join (index: engine.search.seen above INDEX_FROM seen states; plain: "
                        "a Spark anti-join against the stored files)")
    args = p.parse_args(argv)
    sizes = [int(x) for x in args.seen.split(",")]
    k = args.candidates

    spark = get_spark(args.master)
    base = int(spark.conf.get("spark.sql.shuffle.partitions"))
    parts = max(base, -(-k // ROWS_PER_PARTITION))
    spark.conf.set("spark.sql.shuffle.partitions", str(parts))
    rows = []
    modes = ["plain", "index"] if args.mode == "both" else [args.mode]
    print(f"{k:,} candidates (half seen) in {parts} partitions; {args.repeat} runs per size, median")
    print(f"{'mode':>6} {'seen':>12} {'join':>17} {'join s':>7} {'add s':>6} {'us/state':>9} {'x smallest':>10}"
          f"  found new")
    with tempfile.TemporaryDirectory(prefix="antijoin-") as tmp:
        first: dict[str, float] = {}
        for n in sizes:
            path = Path(tmp) / f"seen_{n}"
            _fingerprints(spark, 0, n).repartition(max(1, -(-n // FILE_ROWS))).write.parquet(str(path))
            files = sorted(str(f) for f in path.glob("*.parquet"))
            lo = max(0, n - k // 2)
            cand = (_fingerprints(spark, lo, lo + k).repartition(parts, "_fp", "_fp2")
                    .localCheckpoint(eager=True))
            expect = k - (n - lo)
            fresh = _fingerprints(spark, n, lo + k).localCheckpoint(eager=True)  # the level's new states
            for mode in modes:
                index = None
                if mode == "index":
                    # the run's index as the search leaves it: a fragment per stored file, merged
                    index = SeenIndex(spark, max(base, spark.sparkContext.defaultParallelism))
                    for f in files:
                        index.add(spark.read.parquet(f))
                times, adds, kind, found = [], [], "?", -1
                for _ in range(args.repeat):
                    seen = spark.read.parquet(*files).select("_fp", "_fp2")
                    t0 = time.time()
                    out = index.unseen(cand) if index else plain_unseen(cand, seen)
                    found = out.count()
                    times.append(time.time() - t0)
                    kind = _join_kind(out, index)
                    if index:
                        # what a level also pays: its new states become a fragment (then dropped again)
                        t0 = time.time()
                        extra = SeenIndex(spark, index.partitions)
                        extra.add(fresh)
                        adds.append(time.time() - t0)
                        extra.release()
                if index:
                    index.release()
                if found != expect:
                    raise SystemExit(f"{mode} anti-join of {n:,} seen states kept {found:,} candidates, "
                                     f"expected {expect:,}")
                s, add = statistics.median(times), statistics.median(adds) if adds else 0.0
                per = (s + add) / k * 1e6
                first.setdefault(mode, per)
                rows.append({"mode": mode, "seen": n, "candidates": k, "partitions": parts, "seconds": s,
                             "add_seconds": add, "us_per_state": per, "vs_smallest": per / first[mode],
                             "join": kind, "runs": [round(t, 3) for t in times]})
                print(f"{mode:>6} {n:>12,} {kind:>17} {s:>7.2f} {add:>6.2f} {per:>9.2f} {per / first[mode]:>10.2f}"
                      f"  {found:,}", flush=True)
            cand.unpersist()
            fresh.unpersist()
    if not args.no_record:
        print(f"recorded in {record(rows, args.warehouse, spark.sparkContext.master, 'antijoin_scaling')}")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
