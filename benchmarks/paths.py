"""The search's two paths side by side: the local accelerator, and the portable path in local mode,
through Spark Connect and on a standalone cluster.

    python benchmarks/paths.py CASE [CASE ...] [--deployments accelerated,portable,connect,cluster]
                               [--workers 2] [--no-record]

A CASE is ``MODEL[:CONFIG][+CONST=VALUE...]`` (as for benchmarks/benchmark.py). Each deployment runs
the case fresh, as the command line a user types, in a process of its own:

- ``accelerated``: ``python -m engine check CASE`` in local mode (the accelerator, local[2]);
- ``portable``: the same with ``--setting path=portable`` (public Spark APIs alone, local[2]);
- ``connect``: ``--remote sc://...`` against a Spark Connect server on loopback (local[2]) that this
  script starts first (its start-up is not timed);
- ``cluster``: ``--master spark://...`` against a standalone cluster on loopback with ``--workers``
  workers of one core each, every level in Spark (``level_path=spark``).

For each it prints the figures (which must agree across deployments: a disagreement fails the
script) and the wall time, and the ratio to the accelerated run's. CPU seconds are the command's
process tree's: for ``connect`` and ``cluster`` the server's and the workers' JVMs are not in it, so
only wall times compare. The rows are appended to ``<warehouse>/_paths`` (a Delta table).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from benchmark import record  # noqa: E402
from versus_tlc import timed  # noqa: E402
from engine.model.loader import parse_case  # noqa: E402

DEPLOYMENTS = ("accelerated", "portable", "connect", "cluster")


def case_argv(case: str) -> list[str]:
    model, config, sets = parse_case(case)
    return [model, *(["--config", config] if config else []), *[a for s in sets for a in ("--set", s)]]


def run_case(case: str, deployment: str, wh: Path, target: str | None) -> dict:
    head = [sys.executable, "-m", "engine"]
    extra = {"accelerated": [], "portable": ["--setting", "path=portable"],
             "connect": [], "cluster": ["--setting", "level_path=spark"]}[deployment]
    tail = {"connect": ["--remote", target], "cluster": ["--master", target]}.get(deployment, [])
    argv = [*head, *extra, "check", *case_argv(case), *tail, "--warehouse", str(wh), "--json", "--quiet", "--fresh"]
    env = {**os.environ, "SSE_SERVER": "off", "SPARK_LOCAL_IP": "127.0.0.1"}
    got = timed(argv, ROOT, env)
    if got.returncode not in (0, 11, 12):
        # (a JVM error's first line names it; its stack trace would fill the tail)
        first = next((line for line in got.stderr.splitlines()
                      if ("Error" in line or "Exception" in line) and not line.lstrip().startswith("at ")), "")
        raise SystemExit(f"{case} on {deployment}: exit {got.returncode}: {first[:1000]}\n...\n{got.stderr[-2000:]}")
    res = json.loads(got.stdout)
    return {"case": case, "deployment": deployment, "path": res.get("path", ""), "result": res["result"],
            "distinct": res["distinct_states"], "generated": res["states_generated"], "depth": res["depth"],
            "wall_s": got.wall_s, "cpu_s": got.cpu_s}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="paths.py", description=__doc__.split("\n\n")[0])
    p.add_argument("cases", nargs="+")
    p.add_argument("--deployments", default=",".join(DEPLOYMENTS))
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--warehouse", type=Path, default=ROOT / "warehouse")
    p.add_argument("--no-record", action="store_true")
    args = p.parse_args(argv)
    wanted = [d.strip() for d in args.deployments.split(",") if d.strip()]
    unknown = [d for d in wanted if d not in DEPLOYMENTS]
    if unknown:
        p.error(f"--deployments: unknown {unknown}; choose from {', '.join(DEPLOYMENTS)}")
    from engine.runtime.cluster import LocalCluster, LocalConnectServer
    rows = []
    with tempfile.TemporaryDirectory(prefix="sse-paths-") as tmp:
        for deployment in wanted:
            server = cluster = None
            target = None
            try:
                if deployment == "connect":
                    server = LocalConnectServer(folder=Path(tmp) / "connect").start()
                    target = server.url
                elif deployment == "cluster":
                    cluster = LocalCluster(workers=args.workers, cores=1, memory="2g",
                                           log_dir=Path(tmp) / "cluster").start()
                    target = cluster.master_url
                for case in args.cases:
                    row = run_case(case, deployment, Path(tmp) / deployment, target)
                    rows.append(row)
                    print(f"{case:32s} {deployment:12s} {row['result']}: {row['distinct']:,} distinct, "
                          f"{row['generated']:,} generated, depth {row['depth']}; {row['wall_s']:.1f} s wall, "
                          f"{row['cpu_s']:.1f} CPU-s (the command's processes)", flush=True)
            finally:
                if server is not None:
                    server.stop()
                if cluster is not None:
                    cluster.stop()
    status = 0
    for case in args.cases:
        mine = [r for r in rows if r["case"] == case]
        figures = {(r["result"], r["distinct"], r["generated"], r["depth"]) for r in mine}
        if len(figures) > 1:
            print(f"{case}: the deployments disagree: {sorted(figures)}", file=sys.stderr)
            status = 1
        base = next((r for r in mine if r["deployment"] == "accelerated"), None)
        for r in mine:
            ratio = f"{r['wall_s'] / base['wall_s']:.2f}x the accelerated run" if base else ""
            print(f"{case:32s} {r['deployment']:12s} {r['wall_s']:8.1f} s  {ratio}")
    if rows and not args.no_record:
        for r in rows:
            r["host"] = platform.node()
        print(f"recorded in {record(rows, args.warehouse, 'local[2]', table='paths')}")
    return status


if __name__ == "__main__":
    sys.exit(main())
