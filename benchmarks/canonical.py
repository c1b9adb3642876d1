"""What symmetry's canonical fingerprint costs, over a run's stored states, and whether the engine still
computes the fingerprints the run stored.

    python benchmarks/canonical.py RUN_FOLDER [--depth D] [--rounds 4] [--check]

RUN_FOLDER is a run's folder in a warehouse (``<warehouse>/<model>/<run id>``, holding ``run.json``)
of a run with symmetry. The stored states of level D (default: the largest level stored) are read
once and kept in memory; each round then computes every state's fingerprint and discards it, and
prints the wall time and the CPU time (this process and its JVM's) per state for:
- ``plain``: the fingerprint of the state as it is (what a run without symmetry computes);
- ``helper``: the canonical fingerprint with the JVM helper ``sse_canonical`` (the accelerator's),
  where it is loaded;
- ``sql``: the canonical fingerprint in SQL (the portable path's).
``--check`` also counts the states whose recomputed canonical fingerprint (each way) differs from the
one stored with them: a change to canonicalization must leave it 0, or a run could not resume.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchmark import cpu_seconds, fingerprint_variants  # noqa: E402
from engine.model.loader import load_model  # noqa: E402
from engine.runtime.session import get_spark  # noqa: E402
from engine.search.encoding import JSON, ROW_BYTES  # noqa: E402
from engine.settings import Settings  # noqa: E402
from engine.store.runs import RunStore  # noqa: E402
from pyspark.sql.types import StructType  # noqa: E402

# benchmark.fingerprint_variants's names, as printed here
KINDS = {"plain": "plain", "canonical_jvm": "helper", "canonical": "sql"}


def main(argv: list[str] | None = None, spark=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_folder", type=Path)
    ap.add_argument("--depth", type=int, default=None, help="the level whose states are read (default: the largest)")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--check", action="store_true", help="count the states whose fingerprint differs from the stored one")
    ap.add_argument("--models", type=Path, default=None, help="the models' folder (default: the project's)")
    args = ap.parse_args(argv)

    run_json = args.run_folder / "run.json"
    run = RunStore.stored_spec(args.run_folder)
    if not run:
        ap.error(f"{run_json}: no such file (RUN_FOLDER is a run's folder in a warehouse)")
    if not run.get("symmetry"):
        ap.error(f"{run_json}: the run has no symmetry, so its fingerprints are not canonical")
    levels = sorted(p for p in (args.run_folder / "states").glob("depth-*") if any(p.glob("*.parquet")))
    if args.depth is not None:
        levels = [p for p in levels if p.name == f"depth-{args.depth:06d}"]
    if not levels:
        ap.error(f"{args.run_folder / 'states'}: no stored level" + (f" {args.depth}" if args.depth else ""))
    folder = max(levels, key=lambda p: sum(f.stat().st_size for f in p.glob("*.parquet")))

    using = run.get("fingerprint") or JSON
    if using not in (ROW_BYTES, JSON):
        ap.error(f"{run_json}: unknown fingerprint scheme {using!r}")
    model = load_model(run["model"], args.models)
    missing = [s for s in model.symmetry if s not in run.get("constants", {})]
    if missing:
        ap.error(f"{run_json}: the run's constants do not give the symmetric set {missing[0]!r}")
    # (the symmetric sets as the run had them, --set overrides included)
    sets = {s: run["constants"][s] for s in model.symmetry}
    settings = Settings()
    spark = spark or get_spark(settings)

    stored = spark.read.parquet(str(folder))
    schema = StructType([f for f in stored.schema.fields if f.name in model.variable_names])
    states = (stored.selectExpr(*schema.fieldNames(), "_fp AS _sfp", "_fp2 AS _sfp2")
              .localCheckpoint(eager=True))
    n = states.count()
    print(f"{run['run_id']}: {folder.name}, {n:,} states; fingerprint scheme {using}", flush=True)
    variants = fingerprint_variants(spark, schema, model, sets, using, settings)
    kinds = [k for k in KINDS if k in variants]

    def fingerprints(kind: str):
        d = states
        for stage in variants[kind]:
            d = d.selectExpr("*", *stage)
        return d

    if args.check:
        for kind in kinds[1:]:
            # (kept first: a filter in the same generated stage as the SQL's images outgrows Java's
            # 64 KB method limit, and Spark falls back to interpreting it with a logged error)
            pairs = fingerprints(kind).select("_fp", "_fp2", "_sfp", "_sfp2").localCheckpoint(eager=True)
            differ = pairs.where("_fp <> _sfp OR _fp2 <> _sfp2").count()
            pairs.unpersist()
            print(f"check {KINDS[kind]}: {differ:,} of {n:,} states' fingerprints differ from the stored ones",
                  flush=True)
    for kind in kinds:
        d = fingerprints(kind).select("_fp", "_fp2")
        for i in range(args.rounds):
            # (this process and its JVM: the Python driver idles while the job runs)
            t, c = time.time(), cpu_seconds()
            d.write.format("noop").mode("overwrite").save()
            wall, cpu = time.time() - t, cpu_seconds() - c
            print(f"{KINDS[kind]:7s} round {i}: wall {wall / n * 1e6:6.1f} us a state, "
                  f"CPU {cpu / n * 1e6:6.1f} us a state", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
