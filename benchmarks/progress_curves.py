"""Distinct states over time: TLC and the engine, each given the same wall-clock budget.

    python benchmarks/progress_curves.py CASE --tlc tla2tools.jar[:CommunityModules.jar] --spec-dir DIR
                                          [--cfg FILE] [--seconds 1200] [--workers 2] [--only tlc|engine]
                                          [--every 60] [--markdown]

For a configuration neither checker finishes in a session (BookKeeper with four bookies, the
configuration of TLC's own performance suite), the comparison is how far each gets in the same
time. Each runs in a fresh process, one after the other (TLC first), and is stopped with SIGTERM to
its process group once ``--seconds`` have passed (or when it finishes). Every progress line is
stamped with the wall time since that process started, by this script's clock:

- TLC (``java -XX:+UseParallelGC -cp CP tlc2.TLC -workers W [-deadlock] -config CFG MODULE``)
  prints ``Progress(D) at ...: G states generated ..., N distinct states found ..., Q states left on
  queue`` once a minute;
- the engine (``python -m engine check MODEL --config CONFIG --no-server`` in a temporary warehouse)
  prints ``Progress(D) at ...`` at the end of each breadth-first level.

Printed: each checker's raw points (seconds, depth, distinct, generated, queue), then one table with
both curves sampled every ``--every`` seconds (the last point at or before that time); with
``--markdown`` that table is a Markdown table, ready for the results file. The TLC configuration is
``benchmarks/tlc_cfg/<CONFIG>.cfg`` unless ``--cfg`` names one.
"""
from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from engine.errors import EngineError  # noqa: E402
from engine.model.loader import load_model, parse_case, resolve_run  # noqa: E402
from versus_tlc import class_path, tlc_argv  # noqa: E402

TLC_CFG = ROOT / "benchmarks" / "tlc_cfg"

_TLC = re.compile(r"^Progress\((\d+)\) at [^:]+:\d+:\d+: ([\d,]+) states generated.*?, ([\d,]+) distinct states found"
                  r".*?, ([\d,]+) states left on queue")
_TLC_DONE = re.compile(r"^([\d,]+) states generated, ([\d,]+) distinct states found, ([\d,]+) states left on queue")
_ENGINE = re.compile(r"^Progress\((\d+)\) at\s+[\d.]+s: ([\d,]+) states generated, ([\d,]+) distinct states found, "
                     r"([\d,]+) states left on queue")


@dataclass
class Point:
    seconds: float
    depth: int | None
    distinct: int
    generated: int
    queue: int


def _int(text: str) -> int:
    return int(text.replace(",", ""))


def parse_line(who: str, line: str) -> tuple[int | None, int, int, int] | None:
    """(depth, distinct, generated, queue) from one progress line of ``who`` ("tlc" or "engine"), or None."""
    if who == "tlc":
        m = _TLC.match(line)
        if m:
            return int(m.group(1)), _int(m.group(3)), _int(m.group(2)), _int(m.group(4))
        m = _TLC_DONE.match(line)
        if m:
            return None, _int(m.group(2)), _int(m.group(1)), _int(m.group(3))
        return None
    m = _ENGINE.match(line)
    if m:
        return int(m.group(1)), _int(m.group(3)), _int(m.group(2)), _int(m.group(4))
    return None


def follow(who: str, argv: list[str], cwd: Path, seconds: float, log: Path) -> tuple[list[Point], bool]:
    """Run ``argv`` for at most ``seconds``: its progress points, and whether it finished on its own."""
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    points: list[Point] = []
    with log.open("w") as out:
        def read():
            for line in proc.stdout:
                out.write(line)
                out.flush()
                got = parse_line(who, line)
                if got is not None:
                    points.append(Point(round(time.monotonic() - t0, 1), *got))
        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            proc.wait(timeout=seconds)
            finished = True
        except subprocess.TimeoutExpired:
            finished = False
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        reader.join(timeout=30)
    return points, finished


def sample(points: list[Point], at: float) -> Point | None:
    before = [p for p in points if p.seconds <= at]
    return before[-1] if before else None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("case", help="MODEL[:CONFIG]")
    p.add_argument("--tlc", default=os.environ.get("SSE_TLC_JAR"),
                   help="TLC's class path: tla2tools.jar, with CommunityModules.jar after a colon where the spec needs it")
    p.add_argument("--spec-dir", type=Path, default=os.environ.get("SSE_TLC_SPECS"),
                   help="the folder with the spec's modules")
    p.add_argument("--cfg", type=Path, default=None, help="TLC's configuration (default benchmarks/tlc_cfg/<CONFIG>.cfg)")
    p.add_argument("--seconds", type=float, default=1200, help="each checker's budget (default 1200)")
    p.add_argument("--workers", type=int, default=2, help="TLC's -workers (default 2)")
    p.add_argument("--only", choices=("tlc", "engine"), default=None, help="run one checker only")
    p.add_argument("--every", type=float, default=60, help="the table's sampling interval in seconds (default 60)")
    p.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    p.add_argument("--logs", type=Path, default=None, help="keep each checker's whole output in this folder")
    args = p.parse_args(argv)

    if args.seconds <= 0 or args.every <= 0:
        p.error(f"--seconds {args.seconds:g} and --every {args.every:g}: both above 0")
    model_name, config_name, sets = parse_case(args.case)
    try:
        run = resolve_run(load_model(model_name, None), config_name, sets, None, None)
    except EngineError as exc:
        p.error(f"{args.case}: {exc}")
    config = run.config
    if args.only in (None, "tlc"):
        if not args.tlc:
            p.error("--tlc: TLC's class path is needed (tla2tools.jar, or $SSE_TLC_JAR)")
        for part in args.tlc.split(":"):
            if not Path(part).is_file():
                p.error(f"--tlc {args.tlc}: {part} is not a file")
        module_file = run.model.source.get("module") or ""
        if not module_file or args.spec_dir is None or not (Path(args.spec_dir) / module_file).is_file():
            p.error(f"--spec-dir {args.spec_dir}: no {module_file or 'module'} (the module "
                    f"{run.model.schema_path} names)")
        if sets and args.cfg is None:
            p.error(f"{args.case}: constants set on the case need a --cfg of their own for TLC")
        cfg = Path(args.cfg or TLC_CFG / f"{config}.cfg").resolve()
        if not cfg.is_file():
            p.error(f"--cfg {cfg}: not a file")
    logs = args.logs or Path(tempfile.mkdtemp(prefix="sse-curves-"))
    logs.mkdir(parents=True, exist_ok=True)
    curves: dict[str, tuple[list[Point], bool]] = {}

    if args.only in (None, "tlc"):
        with tempfile.TemporaryDirectory(prefix="sse-tlc-") as meta:
            argv_tlc = tlc_argv("java", class_path(args.tlc), Path(module_file).stem, cfg, args.workers,
                                run.deadlock, meta)
            print("TLC:", " ".join(argv_tlc), flush=True)
            curves["tlc"] = follow("tlc", argv_tlc, args.spec_dir, args.seconds, logs / "tlc.log")
    if args.only in (None, "engine"):
        with tempfile.TemporaryDirectory(prefix="sse-curves-wh-") as wh:
            eng_argv = [sys.executable, "-m", "engine", "check", model_name, "--config", config,
                        *[x for s in sets for x in ("--set", s)], "--warehouse", wh, "--no-server"]
            print("engine:", " ".join(eng_argv[1:]), flush=True)
            curves["engine"] = follow("engine", eng_argv, ROOT, args.seconds, logs / "engine.log")

    for who, (points, finished) in curves.items():
        print(f"\n{who}: {'finished' if finished else f'stopped at {args.seconds:.0f} s'}; output in {logs / (who + '.log')}")
        print(f"{'seconds':>8} {'depth':>5} {'distinct':>14} {'generated':>14} {'queue':>12}")
        for pt in points:
            print(f"{pt.seconds:8.1f} {pt.depth if pt.depth is not None else '-':>5} {pt.distinct:14,} "
                  f"{pt.generated:14,} {pt.queue:12,}")

    names = list(curves)
    ticks = [args.every * i for i in range(1, int(args.seconds // args.every) + 1)]
    head = ["seconds", *[f"{n} distinct (depth)" for n in names]]
    rows = []
    for t in ticks:
        cells = []
        for n in names:
            pt = sample(curves[n][0], t)
            cells.append("—" if pt is None else f"{pt.distinct:,} ({pt.depth if pt.depth is not None else 'end'})")
        rows.append([f"{t:.0f}", *cells])
    print()
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        print("  ".join(f"{h:>24}" for h in head))
        for r in rows:
            print("  ".join(f"{c:>24}" for c in r))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
