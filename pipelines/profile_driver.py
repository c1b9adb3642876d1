"""Where the driver's time goes in a range of levels: its calls into the JVM, and its Python.

    python pipelines/profile_driver.py MODEL [--config C] [--set CONST=VALUE ...] [--no-deadlock]
                                       [--models DIR] [--levels 3-9] [--top 15]

A check runs in this process (a fresh Spark session, a temporary warehouse). While the search
computes the levels in ``--levels`` on the driver (``_Search._arrow_level``, the small and
middle-sized levels), the driver's main thread is profiled (``cProfile``: wall time, so waiting on
Spark's job is in it) and each of its Py4J round trips is counted and timed by the engine's frame
that made it (the persisting thread's are not counted). Printed: the levels' seconds, the round trips a level and their time, the callers
that made the most, and the functions with the most cumulative time. A small level of ledger
chaining was 65 round trips on 2026-11-26 morning, 12 that afternoon.
"""
from __future__ import annotations

import argparse
import collections
import cProfile
import io
import pstats
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "pipelines"))

import engine.search.loop as checker  # noqa: E402
from engine.model.loader import load_model, resolve_run  # noqa: E402
from engine.runtime.session import get_spark  # noqa: E402
from profile_jfr import check_arguments  # noqa: E402


def parse_levels(text: str) -> tuple[int, int]:
    lo, _, hi = text.partition("-")
    try:
        first, last = int(lo), int(hi or lo)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a depth or a range of depths, such as 3-9") from None
    if first < 1 or last < first:
        raise argparse.ArgumentTypeError(f"{text!r}: expected depths from 1 up, the first no deeper than the last")
    return first, last


def _caller(stack: list[traceback.FrameSummary]) -> str:
    """The innermost frame of the engine's own code, with the PySpark frame it called if any."""
    outside = None
    for f in reversed(stack):
        path = f.filename.replace("\\", "/")
        if "/engine/" in path and "/site-packages/" not in path:
            where = f"{Path(path).name}:{f.lineno} {f.name}"
            return f"{where} -> {outside}" if outside else where
        if outside is None and "/pyspark/" in path:
            outside = f"pyspark {Path(path).name}:{f.name}"
    return outside or "?"


class DriverProfile:
    """Profiles the main thread and counts its Py4J round trips while it computes levels ``first``
    to ``last`` on the driver."""

    def __init__(self, first: int, last: int) -> None:
        self.first, self.last = first, last
        self.on = False
        self.profile = cProfile.Profile()
        self.calls: collections.Counter = collections.Counter()
        self.seconds: collections.Counter = collections.Counter()
        self.level_seconds: dict[int, float] = {}

    def install(self) -> None:
        import py4j.clientserver as cs
        real_send = cs.ClientServerConnection.send_command
        prof = self

        def send_command(conn, command):
            if not prof.on or threading.current_thread() is not threading.main_thread():
                return real_send(conn, command)
            t = time.perf_counter()
            try:
                return real_send(conn, command)
            finally:
                key = _caller(traceback.extract_stack(limit=25)[:-1])
                prof.calls[key] += 1
                prof.seconds[key] += time.perf_counter() - t

        cs.ClientServerConnection.send_command = send_command
        real_level = checker._Search._arrow_level

        def arrow_level(search, depth, *args, **kwargs):
            if not (self.first <= depth <= self.last):
                return real_level(search, depth, *args, **kwargs)
            t = time.perf_counter()
            self.on = True
            self.profile.enable()
            try:
                return real_level(search, depth, *args, **kwargs)
            finally:
                self.profile.disable()
                self.on = False
                self.level_seconds[depth] = time.perf_counter() - t

        checker._Search._arrow_level = arrow_level

    def report(self, top: int) -> str:
        n = max(len(self.level_seconds), 1)
        total = sum(self.level_seconds.values())
        lines = [f"levels {sorted(self.level_seconds)} on the driver: {total:.3f} s, {total / n:.3f} s a level",
                 f"Py4J round trips: {sum(self.calls.values()) / n:.1f} a level, "
                 f"{1000 * sum(self.seconds.values()) / n:.1f} ms a level; by caller (a level):"]
        lines += [f"  {c / n:6.1f}  {1000 * self.seconds[k] / n:7.1f} ms  {k}" for k, c in self.calls.most_common(top)]
        out = io.StringIO()
        pstats.Stats(self.profile, stream=out).sort_stats("cumulative").print_stats(top)
        lines.append("the main thread (cProfile, wall time):")
        lines += [line for line in out.getvalue().splitlines() if line.strip()][2:]
        return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    check_arguments(p)
    p.add_argument("--levels", type=parse_levels, default=(3, 9), metavar="FIRST-LAST",
                   help="the depths whose expansion is profiled (default 3-9)")
    args = p.parse_args(argv)
    spec = resolve_run(load_model(args.model, args.models), args.config, args.set, None,
                       False if args.no_deadlock else None)
    prof = DriverProfile(*args.levels)
    prof.install()
    spark = get_spark(None)
    with tempfile.TemporaryDirectory(prefix="sse-driver-") as tmp:
        out = checker.check(spec, Path(tmp), spark=spark, fresh=True)
    print(f"{args.model}: {out.result}, {out.distinct_states:,} distinct, {out.states_generated:,} generated, "
          f"depth {out.depth}, {out.seconds:.1f} s")
    if not prof.level_seconds:
        print(f"no level in {args.levels[0]}-{args.levels[1]} was computed on the driver", file=sys.stderr)
        return 1
    print(prof.report(args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
