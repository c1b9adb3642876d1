"""How well a run's Spark jobs keep the cores busy, from Spark's event log.

    SSE_EVENT_LOG=DIR python -m engine check MODEL [--config C] --fresh   # writes DIR/<app id>/events_*
    python tools/event_log_balance.py DIR [--cores 2] [--min-wall 1.0] [--gaps 0.3]

For each job that ran at least ``--min-wall`` seconds it prints: the job's stages' names, its wall
time, its tasks, the tasks' busy time over ``cores`` × wall (1.00: every core busy from the job's
start to its end), how long exactly one task ran while the others had finished or not yet started
(a straggler's tail), and the longest task. A job at 0.85 with a second of one task alone lost
that second of the other core.

With ``--gaps S`` it prints instead the time no job was running (the driver alone: planning,
Python, commits), from the first job's start to the last job's end, and each stretch of at least S
seconds, with the jobs it came after and before (their call sites): bk_v413_rrf's cold run had 48.2 s
of it in 127 stretches on 2026-11-26.
"""
from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path
from typing import Iterator


def events_file(folder: Path) -> Path:
    found = sorted(p for p in Path(folder).glob("**/events_*") if p.is_file() and not p.name.endswith(".crc"))
    if not found:
        raise SystemExit(f"{folder}: no Spark event log (events_*) under it; run with SSE_EVENT_LOG={folder}")
    return found[-1]


def events(path: Path) -> Iterator[dict]:
    """The event log's events, each a dict with its ``Event`` name."""
    with open(path, errors="replace") as f:
        for line in f:
            try:
                yield json.loads(line)
            except ValueError:
                continue  # a line cut off by a run that was stopped


def balance(path: Path, cores: int = 2, min_wall: float = 1.0) -> list[dict]:
    """One dict per job of at least ``min_wall`` seconds: job, stages, wall_s, tasks, busy (the tasks'
    time over cores × wall), alone_s (time with exactly one task running), max_task_s."""
    jobs: dict[int, dict] = {}
    names: dict[int, str] = {}
    tasks: dict[int, list] = collections.defaultdict(list)
    for e in events(path):
        ev = e.get("Event")
        if ev == "SparkListenerJobStart":
            jobs[e["Job ID"]] = {"start": e["Submission Time"], "stages": e["Stage IDs"]}
        elif ev == "SparkListenerJobEnd" and e["Job ID"] in jobs:
            jobs[e["Job ID"]]["end"] = e["Completion Time"]
        elif ev == "SparkListenerStageSubmitted":
            names[e["Stage Info"]["Stage ID"]] = e["Stage Info"]["Stage Name"]
        elif ev == "SparkListenerTaskEnd":
            info = e["Task Info"]
            tasks[e["Stage ID"]].append((info["Launch Time"], info["Finish Time"]))
    out = []
    for jid, j in sorted(jobs.items()):
        if "end" not in j:
            continue
        wall = (j["end"] - j["start"]) / 1000
        spans = [t for sid in j["stages"] for t in tasks.get(sid, [])]
        if wall < min_wall or not spans or wall <= 0:
            continue
        busy = sum(f - s for s, f in spans) / 1000
        edges = sorted([(s, 1) for s, _ in spans] + [(f, -1) for _, f in spans])
        running, prev, alone = 0, edges[0][0], 0
        for t, d in edges:
            if running == 1:
                alone += t - prev
            running += d
            prev = t
        out.append({"job": jid, "stages": sorted({names.get(s, "?") for s in j["stages"] if s in names}),
                    "wall_s": wall, "tasks": len(spans), "busy": busy / (cores * wall),
                    "alone_s": alone / 1000, "max_task_s": max(f - s for s, f in spans) / 1000})
    return out


def idle(path: Path, min_gap: float = 0.3) -> dict:
    """The time no job ran: ``span_s`` (first job's submission to last job's end), ``idle_s`` (of it,
    no job running: jobs may overlap), ``stretches`` (how many), and ``gaps``: each stretch of at least
    ``min_gap`` seconds as at_s (from the first job), gap_s, after and before (the call sites of the
    job that ended last before it and of the one that started it)."""
    jobs: dict[int, list] = {}
    for e in events(path):
        ev = e.get("Event")
        if ev == "SparkListenerJobStart":
            site = (e.get("Properties") or {}).get("callSite.short", "")
            jobs[e["Job ID"]] = [e["Submission Time"], None, site]
        elif ev == "SparkListenerJobEnd" and e["Job ID"] in jobs:
            jobs[e["Job ID"]][1] = e["Completion Time"]
    spans = sorted((s, t, site) for s, t, site in jobs.values() if t is not None)
    if not spans:
        return {"span_s": 0.0, "idle_s": 0.0, "stretches": 0, "gaps": []}
    t0, end, last = spans[0][0], spans[0][1], spans[0][2]
    total, stretches, gaps = 0, 0, []
    for s, t, site in spans[1:]:
        if s > end:
            total += s - end
            stretches += 1
            if s - end >= min_gap * 1000:
                gaps.append({"at_s": (end - t0) / 1000, "gap_s": (s - end) / 1000, "after": last, "before": site})
        if t > end:
            end, last = t, site
    return {"span_s": (end - t0) / 1000, "idle_s": total / 1000, "stretches": stretches, "gaps": gaps}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--min-wall", type=float, default=1.0)
    ap.add_argument("--gaps", type=float, metavar="S",
                    help="print the time no job ran, and each stretch of at least S seconds")
    args = ap.parse_args(argv)
    if args.gaps is not None:
        found = idle(events_file(args.folder), args.gaps)
        print(f"jobs from first to last: {found['span_s']:.1f} s; no job running: {found['idle_s']:.1f} s "
              f"in {found['stretches']} stretches, {len(found['gaps'])} of at least {args.gaps} s:")
        for g in found["gaps"]:
            print(f"  at {g['at_s']:8.1f} s  {g['gap_s']:6.2f} s  after [{g['after']}]  before [{g['before']}]")
        return 0
    rows = balance(events_file(args.folder), args.cores, args.min_wall)
    print(f"{'job':>5} {'stages':40} {'wall s':>7} {'tasks':>5} {'busy':>5} {'alone s':>7} {'max task s':>10}")
    for r in rows:
        print(f"{r['job']:5d} {','.join(r['stages'])[:40]:40} {r['wall_s']:7.2f} {r['tasks']:5d} "
              f"{r['busy']:5.2f} {r['alone_s']:7.2f} {r['max_task_s']:10.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
