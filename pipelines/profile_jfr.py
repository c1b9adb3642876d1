"""Where a whole check's JVM time goes: a run under the JDK's Flight Recorder, its samples summed.

    python pipelines/profile_jfr.py MODEL [--config C] [--set CONST=VALUE ...] [--no-deadlock]
                                    [--models DIR] [--top 15] [--keep FILE.jfr]

The check runs as ``python -m engine check`` in a JVM of its own, fresh, in a temporary warehouse,
with Java Flight Recorder on (``-XX:StartFlightRecording``, the ``profile`` settings: a stack of
every running Java thread every 10 to 20 ms, taken without stopping the JVM, unlike jstack's). Then
``jfr print`` reads the recording and this prints: the samples by thread (Spark's task threads,
the driver's, the rest), the share of the task threads' samples in which each kind of work is on
the stack (``profile_stacks.KINDS``: the fingerprint, the actions' generator, Arrow, Parquet, ...),
and the most frequent innermost frames. The JIT compilers and the collector are native threads
Flight Recorder does not sample; ``pipelines/benchmark.py`` reports their CPU ("cpu by thread").
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "pipelines"))

from engine.jvm_ext import jdk_tool  # noqa: E402
from engine.session import JAVA_OPTIONS  # noqa: E402
from profile_stacks import summarize  # noqa: E402

TASK_THREAD = "Executor task launch worker"
STACK_DEPTH = 64  # frames a sample (the recording's own depth, Flight Recorder's default)


def jfr_tool() -> str:
    found = jdk_tool("jfr")
    if found is None:
        raise SystemExit("no `jfr` tool (a JDK's bin/jfr) on the PATH or in $JAVA_HOME/bin")
    return str(found)


def samples(recording: Path, depth: int = STACK_DEPTH) -> list[tuple[str, list[str]]]:
    """(thread name, frames innermost first as ``package.Class.method``) of every execution sample.

    ``jfr print`` keeps 5 frames of a stack unless told otherwise; with 5, a task's sample seldom
    shows what it runs for (bk_v413_rrf: a fifth of the task samples were ObjectInputStream's frames
    alone, the task's deserialization). The text output is read line by line (as JSON, with 64
    frames a sample, bk_v413_rrf's recording printed 4.4 GB)."""
    proc = subprocess.Popen([jfr_tool(), "print", "--stack-depth", str(depth), "--events", "jdk.ExecutionSample",
                             str(recording)], stdout=subprocess.PIPE, text=True)
    found, thread, frames = [], "?", None
    assert proc.stdout is not None
    for line in proc.stdout:
        s = line.strip()
        if s.startswith("sampledThread = "):
            thread = s.split('"')[1] if '"' in s else "?"
        elif s == "stackTrace = [":
            frames = []
        elif frames is not None:
            if s == "]":
                if frames:
                    found.append((thread, frames))
                frames = None
            elif s != "...":
                frames.append(s.split("(")[0])
    if proc.wait() != 0:
        raise SystemExit(f"jfr print {recording} failed (exit {proc.returncode})")
    return found


def thread_group(name: str) -> str:
    if name.startswith(TASK_THREAD):
        return "Spark tasks"
    if name == "main" or name.startswith("Thread-"):
        return "driver (Py4J calls, planning)"
    return "other"


def report(found: list[tuple[str, list[str]]], top: int) -> str:
    groups = collections.Counter(thread_group(t) for t, _ in found)
    n = max(len(found), 1)
    lines = [f"{len(found)} samples by thread: " + ", ".join(f"{g} {100 * c / n:.1f} %" for g, c in groups.most_common())]
    lines.append(summarize([f for t, f in found if t.startswith(TASK_THREAD)], top))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model")
    p.add_argument("--config", default=None)
    p.add_argument("--set", action="append", default=[], metavar="CONST=VALUE")
    p.add_argument("--no-deadlock", action="store_true")
    p.add_argument("--models", type=Path, default=None, help="a folder with schemas/ and actions_sql/")
    p.add_argument("--top", type=int, default=15)
    p.add_argument("--keep", type=Path, default=None, help="keep the recording in this file")
    args = p.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="sse-jfr-") as tmp:
        recording = args.keep.resolve() if args.keep else Path(tmp) / "run.jfr"
        cmd = [sys.executable, "-m", "engine", *(["--models", str(args.models)] if args.models else []),
               "check", args.model, "--fresh", "--quiet", "--json", "--warehouse", str(Path(tmp) / "wh")]
        cmd += ["--config", args.config] if args.config else []
        for s in args.set:
            cmd += ["--set", s]
        cmd += ["--no-deadlock"] if args.no_deadlock else []
        options = os.environ.get("SSE_JAVA_OPTIONS", JAVA_OPTIONS)
        env = {**os.environ, "PYTHONPATH": str(ROOT),
               # (the recorder's start-up message to stderr: stdout is the check's JSON)
               "SSE_JAVA_OPTIONS": f"{options} -Xlog:jfr*=warning:stderr -XX:StartFlightRecording=filename={recording},"
                                   "settings=profile,dumponexit=true"}
        done = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if done.returncode not in (0, 11, 12):
            print(done.stderr[-3000:], file=sys.stderr)
            return done.returncode
        result = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"{args.model}: {result['result']}, {result['distinct_states']:,} distinct, "
              f"{result['states_generated']:,} generated, depth {result['depth']}, {result['seconds']:.1f} s")
        print(report(samples(recording), args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
