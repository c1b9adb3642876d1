"""What Spark itself gets from a second core on this machine: the ceiling for the engine's
local[1] to local[2] figure.

    python tools/core_scaling.py [--rows 6000000] [--repeat 3]

It runs one CPU-bound job, like the fingerprints' (xxhash64 of the JSON text of nested structs, 24
partitions, no shuffle, nothing written), ``--repeat`` times in a fresh ``local[1]`` process and
then in a fresh ``local[2]`` one, and prints each time and the ratio of the warm medians (the
first run of each pays the JIT's warm-up). The engine's own figure is
``python benchmarks/benchmark.py CASE --master local[1]`` against the same without ``--master``.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

JOB = ("xxhash64(to_json(named_struct('a', id, 'b', transform(sequence(1, 8), "
       "x -> named_struct('x', x * id, 'y', cast(x AS string)))))) AS h")


def _child(master: str, rows: int, repeat: int) -> None:
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master(master).config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    df = spark.range(0, rows, numPartitions=24).selectExpr(JOB)
    for _ in range(repeat):
        t = time.perf_counter()
        df.selectExpr("sum(h % 1000)").collect()
        print(f"{time.perf_counter() - t:.3f}", flush=True)
    spark.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=6_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.repeat < 2:
        ap.error("--repeat must be at least 2 (the first run is the JIT's warm-up)")
    if args.child:
        _child(args.child, args.rows, args.repeat)
        return
    warm = {}
    for master in ("local[1]", "local[2]"):
        out = subprocess.run([sys.executable, __file__, "--child", master, "--rows", str(args.rows),
                              "--repeat", str(args.repeat)], capture_output=True, text=True, check=True).stdout
        times = [float(x) for x in out.split()]
        warm[master] = statistics.median(times[1:])
        print(f"{master:9s} " + "  ".join(f"{t:.3f} s" for t in times) + f"   (warm median {warm[master]:.3f} s)")
    print(f"local[1] / local[2]: {warm['local[1]'] / warm['local[2]']:.2f}x")


if __name__ == "__main__":
    main()
