"""The engine against TLC on the same configuration, cold, end to end, in alternating pairs.

    python benchmarks/versus_tlc.py CASE --tlc tla2tools.jar --spec-dir DIR [--cfg FILE] [--pairs 3]
                                   [--first tlc|engine] [--workers 2] [--java java] [--warehouse DIR]
                                   [--server [--warm-ups 3]] [--no-record]

Issue 7 asks for ledger chaining "within 1.5x TLC's time, Spark start-up included", and for the
largest oracle configuration TLC completes in minutes to run faster than TLC. On this kind of
machine the speed of the cores drifts by half within minutes (TLC's ledger chaining took 10.9 s and
16.5 s ten minutes apart on 2026-11-27), so a figure from one run of each, taken at different
times, says little. This runs both, one after the other, ``--pairs`` times, the order swapped each
pair (TLC first in the first pair, the engine first in the second, ...; ``--first engine`` the
other way round, for a pair run on its own after one TLC began), and prints each pair's ratio and
the median of the ratios.

Both run as a user runs them, in fresh processes, timed from start to exit:
- TLC: ``java -XX:+UseParallelGC -cp JAR tlc2.TLC -workers W [-deadlock] -config CFG -metadir TMP
  MODULE`` in ``--spec-dir`` (the folder with the spec's modules, from the repository the model's
  schema names under ``source``). ``-deadlock`` (TLC's switch that turns the deadlock check off)
  is given when the engine's configuration does not check deadlocks.
- the engine: ``python -m engine check MODEL --config CONFIG --warehouse TMP --json --quiet
  --no-server``: Python's start, Spark's, the model's analysis, the search and every table written.

``--server`` times the engine as a user with an engine server runs it (``python -m engine serve``,
README: The engine server): a server of this comparison's own is started (at a socket in a temporary
folder) and checks the case ``--warm-ups`` times, untimed, before the pairs; each engine run is then
``python -m engine check ...`` without ``--no-server``, handed to it. Its CPU seconds are the
command's and the server's process tree's over the command. TLC has no such mode: its runs stay
cold. This is the engine's search without Spark's start-up and with the JVM's code compiled: issue
7's target is for the cold run, and this says how much of the cold run is start-up and warm-up.

CASE is the benchmark's: ``MODEL[:CONFIG]``. The configuration's TLC file is
``benchmarks/tlc_cfg/<CONFIG>.cfg`` (the reference runs' configurations) unless ``--cfg`` names one; a case with
``+CONST=VALUE`` overrides needs a ``--cfg`` of its own. CPU seconds are those of each process tree
(``os.wait4``). Both must find the same result, and for a run without a finding the same distinct
states, states generated and depth (with more than one TLC worker, a depth at most TLC's: its depth
can overshoot the breadth-first one): otherwise the pair is reported and the command fails.

Each pair is appended to the Delta table ``<warehouse>/_versus_tlc`` unless ``--no-record``.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
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

from benchmark import _stat_fields, cpu_seconds, descendants, record, stat_cpu_seconds  # noqa: E402
import engine.cli.client as engine_server  # noqa: E402
from engine.errors import EXIT_DEADLOCK, EXIT_OK, EXIT_VIOLATION, EngineError  # noqa: E402
from engine.model.loader import load_model, parse_case, resolve_run  # noqa: E402

# TLC's configuration files of the reference runs, one per named configuration.
ORACLE_CFG = ROOT / "benchmarks" / "tlc_cfg"
TARGET = 1.5  # issue 7: ledger chaining within 1.5x TLC's time


@dataclass
class Timed:
    wall_s: float
    cpu_s: float
    returncode: int
    stdout: str
    stderr: str


@dataclass
class Figures:
    result: str  # "ok", "invariant_violated:<name>" or "deadlock"
    distinct: int | None
    generated: int | None
    depth: int | None


def timed(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> Timed:
    """Run ``argv`` in ``cwd``: its wall time from start to exit, and the CPU seconds of its process
    tree. The kernel's figure for the process (``os.wait4``) counts the children it reaped; a child
    it leaves behind (PySpark does not wait for the JVM it started, which exits once Python has) is
    sampled every 0.2 s while it lives and counted at its last sample."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out: dict[str, str] = {}
    last: dict[int, float] = {}
    parents: dict[int, int] = {}
    done = threading.Event()

    def drain(name, stream):
        out[name] = stream.read()

    def sample():
        while not done.wait(0.2):
            for pid, parent, fields in descendants(proc.pid):
                last[pid], parents[pid] = stat_cpu_seconds(fields), parent
    threads = [threading.Thread(target=drain, args=(n, s), daemon=True) for n, s in (("out", proc.stdout),
                                                                                     ("err", proc.stderr))]
    threads.append(threading.Thread(target=sample, daemon=True))
    for t in threads:
        t.start()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    done.set()
    for t in threads:
        t.join()
    proc.stdout.close()
    proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    # The descendants still alive were not reaped by it: followed until they end. (One whose parent
    # is among them is counted in that parent's figure, which counts the children it reaped.)
    left = [pid for pid in last if _stat_fields(pid) is not None]
    orphans = [pid for pid in left if parents.get(pid) not in left]
    deadline = time.monotonic() + 60
    while left and time.monotonic() < deadline:
        for pid in left:
            fields = _stat_fields(pid)
            if fields is not None:
                last[pid] = stat_cpu_seconds(fields)
        time.sleep(0.1)
        left = [pid for pid in left if _stat_fields(pid) is not None]
    return Timed(wall, usage.ru_utime + usage.ru_stime + sum(last[p] for p in orphans), proc.returncode,
                 out.get("out", ""), out.get("err", ""))


_COUNTS = re.compile(r"^([\d,]+) states generated, ([\d,]+) distinct states found, [\d,]+ states left on queue\.",
                     re.MULTILINE)
_DEPTH = re.compile(r"^The depth of the complete state graph search is (\d+)\.", re.MULTILINE)
_INVARIANT = re.compile(r"^Error: Invariant (\S+) is violated", re.MULTILINE)


def tlc_figures(output: str) -> Figures:
    """TLC's result and final figures from what it printed; ValueError when it printed no result."""
    counts = _COUNTS.findall(output)
    depth = _DEPTH.search(output)
    inv = _INVARIANT.search(output)
    if inv:
        result = f"invariant_violated:{inv.group(1)}"
    elif re.search(r"^Error: Deadlock reached", output, re.MULTILINE):
        result = "deadlock"
    elif "Model checking completed. No error has been found." in output:
        result = "ok"
    else:
        tail = "\n".join(output.strip().splitlines()[-5:])
        raise ValueError(f"TLC printed no result; its last lines:\n{tail}")
    generated, distinct = (int(x.replace(",", "")) for x in counts[-1]) if counts else (None, None)
    return Figures(result, distinct, generated, int(depth.group(1)) if depth else None)


def engine_figures(stdout: str) -> Figures:
    res = json.loads(stdout)
    result = res["result"]
    if result == "invariant_violated":
        result = f"invariant_violated:{res['violated_invariant']}"
    return Figures(result, res["distinct_states"], res["states_generated"], res["depth"])


def deeper_by_workers(tlc: Figures, eng: Figures, workers: int) -> bool:
    """Whether TLC reports a greater depth than the engine only as its workers do: with more than one,
    a worker may take a state off the queue before the level above is done, and the depth TLC prints
    can overshoot the breadth-first depth (ledger chaining: 41 once in about ten runs, else 40)."""
    return workers > 1 and None not in (tlc.depth, eng.depth) and eng.depth < tlc.depth


def disagreement(tlc: Figures, eng: Figures, workers: int = 1) -> str | None:
    """Why the two runs disagree, or None. Figures are compared only for runs without a finding (TLC
    stops within a level at a violation, the engine at the end of it). The depth must be TLC's, or,
    with more than one TLC worker, at most TLC's (``deeper_by_workers``)."""
    if tlc.result != eng.result:
        return f"TLC found {tlc.result}, the engine {eng.result}"
    if tlc.result == "ok" and ((tlc.distinct, tlc.generated) != (eng.distinct, eng.generated)
                               or (tlc.depth != eng.depth and not deeper_by_workers(tlc, eng, workers))):
        return (f"TLC: {tlc.distinct:,} distinct, {tlc.generated:,} generated, depth {tlc.depth}; engine: "
                f"{eng.distinct:,} distinct, {eng.generated:,} generated, depth {eng.depth}")
    return None


def pair_orders(pairs: int, first: str = "tlc") -> list[tuple[str, str]]:
    """Which runs first in each pair: ``first`` in the first pair, the other in the second, and so on."""
    other = {"tlc": "engine", "engine": "tlc"}[first]
    return [(first, other) if i % 2 == 0 else (other, first) for i in range(pairs)]


def class_path(text: str) -> str:
    """``--tlc``'s jars (one, or several joined by ':'), each made absolute: TLC runs in the spec's folder."""
    return ":".join(str(Path(part).resolve()) for part in text.split(":"))


def tlc_argv(java: str, jar: Path | str, module: str, cfg: Path, workers: int, deadlock: bool, meta: str) -> list[str]:
    """TLC's command line as the comparisons run it (``-deadlock`` where the engine checks no deadlock)."""
    return [java, "-XX:+UseParallelGC", "-cp", str(jar), "tlc2.TLC", "-workers", str(workers),
            *([] if deadlock else ["-deadlock"]), "-config", str(cfg), "-metadir", meta, module]


def run_tlc(java: str, jar: Path | str, spec_dir: Path, module: str, cfg: Path, workers: int, deadlock: bool) -> Timed:
    with tempfile.TemporaryDirectory(prefix="sse-tlc-") as meta:
        return timed(tlc_argv(java, jar, module, cfg, workers, deadlock, meta), spec_dir)


class EngineServer:
    """An engine server of the comparison's own (``--server``), started as a user starts one:
    ``python -m engine serve --detach`` at a socket in ``folder`` (its output in ``<socket>.log``
    there), and stopped with ``serve --stop``. Should this process be killed before that, the server
    stops itself once idle for IDLE_STOP_MIN minutes."""

    STOP_SECONDS = 120
    IDLE_STOP_MIN = 30

    def __init__(self, folder: Path, models: Path | None = None):
        self.sock = folder / "server.sock"
        self.env = {**os.environ, engine_server.ENV: str(self.sock)}
        self.models = ["--models", str(models)] if models else []
        started = self._serve("--detach", "--idle-stop", str(self.IDLE_STOP_MIN))
        hello = engine_server.greeting(self.sock) if started.returncode == 0 else None
        if hello is None:
            raise SystemExit(f"the engine server did not start (exit {started.returncode}):\n{started.stderr[-3000:]}")
        self.pid = int(hello["pid"])

    def _serve(self, *argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "engine", *self.models, "serve", *argv], cwd=ROOT, env=self.env,
                              capture_output=True, text=True, timeout=600)

    def served(self) -> int | None:
        """How many commands it has run, or None when it does not answer."""
        hello = engine_server.greeting(self.sock)
        return None if hello is None else int(hello["served"])

    def cpu_s(self) -> float:
        """The CPU seconds of its process tree so far (its JVM's included)."""
        return cpu_seconds(self.pid)

    def alive(self) -> bool:
        fields = _stat_fields(self.pid)
        return fields is not None and fields[0] != "Z"

    def stop(self) -> None:
        """``serve --stop`` (it exits after the command it runs, if any); killed if it has not exited
        within STOP_SECONDS."""
        if self.served() is not None:
            self._serve("--stop")
        end = time.monotonic() + self.STOP_SECONDS
        while self.alive() and time.monotonic() < end:
            time.sleep(0.2)
        if self.alive():
            os.kill(self.pid, 9)


def run_engine(model: str, config: str, sets: list[str], models: Path | None,
               server: EngineServer | None = None) -> Timed:
    """The engine's check of the case in a temporary warehouse, in a process of its own, or handed to
    ``server`` (its CPU seconds then the command's and the server's over the command). A command the
    server did not run (the client says why on stderr) is an error: its figure would be a cold run's."""
    with tempfile.TemporaryDirectory(prefix="sse-vs-") as wh:
        argv = [sys.executable, "-m", "engine", *(["--models", str(models)] if models else []), "check", model,
                "--config", config, *[x for s in sets for x in ("--set", s)], "--warehouse", wh, "--json",
                "--quiet", *([] if server else ["--no-server"])]
        if server is None:
            return timed(argv, ROOT)
        served, cpu = server.served(), server.cpu_s()
        got = timed(argv, ROOT, server.env)
        after = server.served()
        if served is None or after != served + 1:
            raise SystemExit(f"the check did not run on the engine server at {server.sock}:\n{got.stderr[-3000:]}")
        got.cpu_s += server.cpu_s() - cpu
        return got


def finished(engine: Timed) -> Timed:
    """``engine``, unless the check failed (an exit status other than a result's): then its error."""
    if engine.returncode not in (EXIT_OK, EXIT_DEADLOCK, EXIT_VIOLATION):
        raise SystemExit(f"the engine failed (exit {engine.returncode}):\n{engine.stderr[-3000:]}")
    return engine


def _pairs(args, model_name, spec, sets, module, cfg, jar, spec_dir, server, mode):
    """The alternating pairs: their rows, the disagreements, and TLC's depths that overshot."""
    rows, failed, overshoots = [], [], []
    for i, order in enumerate(pair_orders(args.pairs, args.first)):
        got: dict[str, Timed] = {}
        for who in order:
            got[who] = (run_tlc(args.java, jar, spec_dir, module, cfg, args.workers, spec.deadlock) if who == "tlc"
                        else run_engine(model_name, spec.config, sets, args.models, server))
        t, e = got["tlc"], finished(got["engine"])
        try:
            tf = tlc_figures(t.stdout + t.stderr)
        except ValueError as exc:
            raise SystemExit(f"TLC (exit {t.returncode}): {exc}") from None
        ef = engine_figures(e.stdout)
        why = disagreement(tf, ef, args.workers)
        overshoot = tf.result == "ok" and deeper_by_workers(tf, ef, args.workers)
        if overshoot:
            overshoots.append(tf.depth)
        ratio = e.wall_s / t.wall_s
        print(f"pair {i + 1}  ({' then '.join(order)})  TLC {t.wall_s:6.1f} s ({t.cpu_s:6.1f} CPU-s)   engine"
              f"{'' if mode == 'cold' else ' (server)'} {e.wall_s:6.1f} s ({e.cpu_s:6.1f} CPU-s)   engine/TLC {ratio:.2f}x"
              + (f"   DISAGREE: {why}" if why else "")
              + (f"   (TLC's depth {tf.depth}: with {args.workers} workers it can overshoot)" if overshoot else ""),
              flush=True)
        if why:
            failed.append(why)
        rows.append({"case": args.case, "pair": i + 1, "first": order[0], "tlc_s": round(t.wall_s, 3),
                     "tlc_cpu_s": round(t.cpu_s, 3), "engine_s": round(e.wall_s, 3), "engine_cpu_s": round(e.cpu_s, 3),
                     "ratio": round(ratio, 4), "result": ef.result, "distinct": ef.distinct,
                     "generated": ef.generated, "depth": ef.depth, "tlc_workers": args.workers, "engine_mode": mode})
    return rows, failed, overshoots


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("case", help="MODEL[:CONFIG] (the benchmark's CASE)")
    p.add_argument("--tlc", default=os.environ.get("SSE_TLC_JAR"),
                   help="TLC's tla2tools.jar, or a class path of jars joined by ':' (BookKeeper needs "
                        "CommunityModules.jar after it) (default: $SSE_TLC_JAR)")
    p.add_argument("--spec-dir", type=Path, default=os.environ.get("SSE_TLC_SPECS"),
                   help="the folder with the spec's modules (default: $SSE_TLC_SPECS)")
    p.add_argument("--cfg", type=Path, default=None, help="TLC's configuration file "
                   "(default: benchmarks/tlc_cfg/<CONFIG>.cfg)")
    p.add_argument("--pairs", type=int, default=3, help="runs of each, alternating (default 3)")
    p.add_argument("--first", choices=("tlc", "engine"), default="tlc",
                   help="which runs first in the first pair (the order swaps each pair; default tlc)")
    p.add_argument("--workers", type=int, default=2, help="TLC's -workers (default 2, as the oracle)")
    p.add_argument("--java", default="java", help="the java TLC runs on (default: java on the PATH)")
    p.add_argument("--models", type=Path, default=None, help="folder with schemas/ and actions_sql/")
    p.add_argument("--warehouse", type=Path, default=ROOT / "warehouse",
                   help="where the _versus_tlc Delta table is appended to")
    p.add_argument("--no-record", action="store_true", help="print only; do not append to _versus_tlc")
    p.add_argument("--server", action="store_true",
                   help="hand the engine's runs to an engine server of this comparison's own, warmed up first")
    p.add_argument("--warm-ups", type=int, default=3,
                   help="with --server: untimed checks of the case on the server before the pairs (default 3)")
    args = p.parse_args(argv)
    if args.pairs < 1:
        p.error(f"--pairs {args.pairs}: at least 1")
    if args.warm_ups < 0:
        p.error(f"--warm-ups {args.warm_ups}: at least 0")
    for part in (args.tlc or "").split(":"):
        if not part or not Path(part).is_file():
            p.error(f"--tlc {part or None}: not a file (TLC's tla2tools.jar, or $SSE_TLC_JAR)")
    if args.spec_dir is None or not Path(args.spec_dir).is_dir():
        p.error(f"--spec-dir {args.spec_dir}: not a folder (the spec's modules, or $SSE_TLC_SPECS)")
    model_name, config, sets = parse_case(args.case)
    try:
        spec = resolve_run(load_model(model_name, args.models), config, sets, None, None)
    except EngineError as exc:
        p.error(f"{args.case}: {exc}")
    module = spec.model.source.get("module")
    if not module:
        p.error(f"{spec.model.schema_path}: no source module (schema's source: module) to give TLC")
    if not (args.spec_dir / module).is_file():
        p.error(f"--spec-dir {args.spec_dir}: no {module} (the module {spec.model.schema_path} names)")
    if sets and args.cfg is None:
        p.error(f"{args.case}: constants set on the case need a --cfg of their own for TLC")
    cfg = Path(args.cfg or ORACLE_CFG / f"{spec.config}.cfg").resolve()
    if not cfg.is_file():
        p.error(f"--cfg {cfg}: not a file")
    jar = class_path(args.tlc)
    spec_dir = Path(args.spec_dir).resolve()

    mode = "server" if args.server else "cold"
    print(f"case     {args.case} ({model_name}:{spec.config}; TLC: {module} with {cfg}, "
          f"{args.workers} workers{'' if spec.deadlock else ', -deadlock'})", flush=True)
    with tempfile.TemporaryDirectory(prefix="sse-vs-server-") as folder:
        server = EngineServer(Path(folder), args.models) if args.server else None
        try:
            if server is not None:
                print(f"server   pid {server.pid} at {server.sock}", flush=True)
                for k in range(args.warm_ups):
                    w = finished(run_engine(model_name, spec.config, sets, args.models, server))
                    print(f"warm-up {k + 1}  engine {w.wall_s:6.1f} s ({w.cpu_s:6.1f} CPU-s), not counted", flush=True)
            rows, failed, overshoots = _pairs(args, model_name, spec, sets, module, cfg, jar, spec_dir, server, mode)
        finally:
            if server is not None:
                server.stop()
    ratios = [r["ratio"] for r in rows]
    med = statistics.median(ratios)
    print(f"result   {rows[0]['result']}: {rows[0]['distinct']:,} distinct, {rows[0]['generated']:,} generated, "
          f"depth {rows[0]['depth']} (both" + (f"; TLC's depth overshot in {len(overshoots)} pair(s): "
                                                 f"{', '.join(map(str, overshoots))})" if overshoots else ")")
          if not failed else "result   the two disagree (above)")
    print(f"median   TLC {statistics.median(r['tlc_s'] for r in rows):.1f} s, engine "
          f"{statistics.median(r['engine_s'] for r in rows):.1f} s; engine/TLC {med:.2f}x "
          f"(pairs {min(ratios):.2f}x to {max(ratios):.2f}x); "
          + (f"within {TARGET}x: {'yes' if med <= TARGET else 'no'}, " if mode == "cold" else "")
          + f"faster than TLC: {'yes' if med < 1 else 'no'}"
          + ("" if mode == "cold" else f" (the engine on a running server: no Spark start-up, its code "
                                        f"compiled; the {TARGET}x target is for a cold run)"))
    if not args.no_record:
        print(f"recorded in {record(rows, args.warehouse, 'local[2]', table='versus_tlc')}")
    if failed:
        raise SystemExit(f"{len(failed)} pair(s) disagree: {failed[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
