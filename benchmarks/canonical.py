"""What symmetry's canonical fingerprint costs, over a run's stored states, and whether the engine still
computes the fingerprints the run stored.

    python benchmarks/canonical.py RUN_FOLDER [--depth D] [--rounds 4] [--check]

RUN_FOLDER is a run's folder in a warehouse (``<warehouse>/<model>/<run id>``, holding ``run.json``)
of a run with symmetry. The stored states of level D (default: the largest level stored) are read
once and kept in memory; each round then computes every state's fingerprint and discards it, and
prints the wall time and the JVM's CPU time per state for:
- ``plain``: the fingerprint of the state as it is (what a run without symmetry computes);
- ``helper``: the canonical fingerprint with the JVM helper ``sse_canonical`` (the accelerator's),
  where it is loaded;
- ``sql``: the canonical fingerprint in SQL (the portable path's).
``--check`` also counts the states whose recomputed canonical fingerprint (each way) differs from the
one stored with them: a change to canonicalization must leave it 0, or a run could not resume.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import engine.runtime.jvm_ext as jvm_ext  # noqa: E402
from engine.model.loader import load_model  # noqa: E402
from engine.runtime.session import get_spark  # noqa: E402
from engine.search import symmetry  # noqa: E402
from engine.search.encoding import JSON, ROW_BYTES, fingerprint_sql, scheme_name  # noqa: E402
from engine.settings import Settings  # noqa: E402
from pyspark.sql.types import StructType  # noqa: E402


def _jvm_cpu(pid: str | None) -> float:
    """The JVM's CPU seconds so far (user and system), from /proc; 0 where it cannot be read."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, TypeError, IndexError, ValueError):
        return 0.0


def main(argv: list[str] | None = None, spark=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_folder", type=Path)
    ap.add_argument("--depth", type=int, default=None, help="the level whose states are read (default: the largest)")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--check", action="store_true", help="count the states whose fingerprint differs from the stored one")
    ap.add_argument("--models", type=Path, default=None, help="the models' folder (default: the project's)")
    args = ap.parse_args(argv)

    run_json = args.run_folder / "run.json"
    if not run_json.is_file():
        ap.error(f"{run_json}: no such file (RUN_FOLDER is a run's folder in a warehouse)")
    run = json.loads(run_json.read_text())
    if not run.get("symmetry"):
        ap.error(f"{run_json}: the run has no symmetry, so its fingerprints are not canonical")
    levels = sorted(p for p in (args.run_folder / "states").glob("depth-*") if any(p.glob("*.parquet")))
    if args.depth is not None:
        levels = [p for p in levels if p.name == f"depth-{args.depth:06d}"]
    if not levels:
        ap.error(f"{args.run_folder / 'states'}: no stored level" + (f" {args.depth}" if args.depth else ""))
    folder = max(levels, key=lambda p: sum(f.stat().st_size for f in p.glob("*.parquet")))

    using = {**{scheme_name(s): s for s in (ROW_BYTES, JSON)}, ROW_BYTES: ROW_BYTES, JSON: JSON}.get(run.get("fingerprint"))
    if using is None:
        ap.error(f"{run_json}: unknown fingerprint scheme {run['fingerprint']!r}")
    model = load_model(run["model"], args.models)
    missing = [s for s in model.symmetry if s not in run.get("constants", {})]
    if missing:
        ap.error(f"{run_json}: the run's constants do not give the symmetric set {missing[0]!r}")
    # (the symmetric sets as the run had them, --set overrides included)
    sets = {s: run["constants"][s] for s in model.symmetry}
    settings = Settings()
    spark = spark or get_spark(settings)
    java = subprocess.run(["pgrep", "-P", str(os.getpid()), "java"], capture_output=True, text=True).stdout.split()
    pid = java[0] if java else None

    stored = spark.read.parquet(str(folder))
    schema = StructType([f for f in stored.schema.fields if f.name in model.variable_names])
    states = stored.select(*schema.fieldNames(), "_fp", "_fp2").localCheckpoint(eager=True)
    n = states.count()
    print(f"{run['run_id']}: {folder.name}, {n:,} states; fingerprint scheme {run['fingerprint']}", flush=True)

    def fingerprints(kind: str):
        if kind == "plain":
            fp1, fp2 = fingerprint_sql([(f.name, f.dataType) for f in schema.fields], using=using)
            stages = [[f"{fp1} AS _cfp", f"{fp2} AS _cfp2"]]
        else:
            stages = symmetry.canonical_fingerprint_stages(
                schema, model.symmetry_shapes, sets, using=using, helper=kind == "helper",
                literal_permutations=settings.literal_permutations)
            stages[-1] = [e.replace(" AS _fp2", " AS _cfp2").replace(" AS _fp", " AS _cfp") for e in stages[-1]]
        d = states
        for stage in stages:
            d = d.selectExpr("*", *stage)
        return d

    kinds = ["plain"]
    if (using == ROW_BYTES and symmetry.helper_supports(schema)
            and jvm_ext.use(spark, "Canonical", settings, "symmetry", "measured in SQL alone")):
        kinds.append("helper")
    kinds.append("sql")
    if args.check:
        for kind in kinds[1:]:
            # (kept first: a filter in the same generated stage as the SQL's images outgrows Java's
            # 64 KB method limit, and Spark falls back to interpreting it with a logged error)
            pairs = fingerprints(kind).select("_cfp", "_cfp2", "_fp", "_fp2").localCheckpoint(eager=True)
            differ = pairs.where("_cfp <> _fp OR _cfp2 <> _fp2").count()
            pairs.unpersist()
            print(f"check {kind}: {differ:,} of {n:,} states' fingerprints differ from the stored ones", flush=True)
    for kind in kinds:
        d = fingerprints(kind).select("_cfp", "_cfp2")
        for i in range(args.rounds):
            t, c = time.time(), _jvm_cpu(pid)
            d.write.format("noop").mode("overwrite").save()
            wall, cpu = time.time() - t, _jvm_cpu(pid) - c
            print(f"{kind:7s} round {i}: wall {wall / n * 1e6:6.1f} us a state, JVM CPU {cpu / n * 1e6:6.1f} us a state",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
