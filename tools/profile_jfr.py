"""Where a whole check's JVM time goes: a run under the JDK's Flight Recorder, its samples summed.

    python pipelines/profile_jfr.py MODEL [--config C] [--set CONST=VALUE ...] [--no-deadlock]
                                    [--models DIR] [--top 15] [--keep FILE.jfr] [--jit]
                                    [--period MS] [--from SECONDS]

The check runs as ``python -m engine check`` in a JVM of its own, fresh, in a temporary warehouse,
with Java Flight Recorder on (``-XX:StartFlightRecording``, the ``profile`` settings: a stack of
every running Java thread every 10 to 20 ms, taken without stopping the JVM, unlike jstack's). Then
``jfr print`` reads the recording and this prints: the samples by thread (Spark's task threads,
the driver's, the rest), the share of the task threads' samples in which each kind of work is on
the stack (``profile_stacks.KINDS``: the fingerprint, the actions' generator, Arrow, Parquet, ...),
and the most frequent innermost frames. ``--period 1`` samples every millisecond instead (what a level
of a handful of states does, 0.1 s, in its tasks), and ``--from S`` sums only the samples taken S
seconds or more after the first (past Spark's start-up and the first levels). The JIT compilers and the collector are native threads
Flight Recorder does not sample; ``pipelines/benchmark.py`` reports their CPU ("cpu by thread").

``--jit`` records what those compilers did instead (no stack samples): every compilation, however
short (``jdk.Compilation``, threshold 0), and every deoptimization (``jdk.Deoptimization``). Printed:
the compilers' time by tier and by what they compiled (Spark's generated classes, Spark, Parquet,
Arrow, Janino, Scala, the JDK, ...), the methods that took the most compiling (with how many times
each was compiled), and the deoptimizations by reason and by method: the JIT's side of a cold run.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "pipelines"))

from engine.runtime.jvm_ext import jdk_tool  # noqa: E402
from engine.settings import JAVA_OPTIONS  # noqa: E402
from profile_stacks import summarize  # noqa: E402

TASK_THREAD = "Executor task launch worker"
STACK_DEPTH = 64  # frames a sample (the recording's own depth, Flight Recorder's default)


def jfr_tool() -> str:
    found = jdk_tool("jfr")
    if found is None:
        raise SystemExit("no `jfr` tool (a JDK's bin/jfr) on the PATH or in $JAVA_HOME/bin")
    return str(found)


def samples(recording: Path, depth: int = STACK_DEPTH, since: float = 0.0) -> list[tuple[str, list[str]]]:
    """(thread name, frames innermost first as ``package.Class.method``) of every execution sample
    (``since``: of those taken that many seconds or more after the first).

    ``jfr print`` keeps 5 frames of a stack unless told otherwise; with 5, a task's sample seldom
    shows what it runs for (bk_v413_rrf: a fifth of the task samples were ObjectInputStream's frames
    alone, the task's deserialization). The text output is read line by line (as JSON, with 64
    frames a sample, bk_v413_rrf's recording printed 4.4 GB)."""
    proc = subprocess.Popen([jfr_tool(), "print", "--stack-depth", str(depth), "--events", "jdk.ExecutionSample",
                             str(recording)], stdout=subprocess.PIPE, text=True)
    found, thread, frames, first, at = [], "?", None, None, 0.0
    assert proc.stdout is not None
    for line in proc.stdout:
        s = line.strip()
        if s.startswith("startTime = "):
            h, m, sec = s.split()[2].split(":")
            at = int(h) * 3600 + int(m) * 60 + float(sec)
            first = at if first is None else first
        elif s.startswith("sampledThread = "):
            thread = s.split('"')[1] if '"' in s else "?"
        elif s == "stackTrace = [":
            frames = []
        elif frames is not None:
            if s == "]":
                if frames and (at - first) % 86400 >= since:  # (a recording across midnight)
                    found.append((thread, frames))
                frames = None
            elif s != "...":
                frames.append(s.split("(")[0])
    if proc.wait() != 0:
        raise SystemExit(f"jfr print {recording} failed (exit {proc.returncode})")
    return found


# What a compiled method belongs to, by its class's name (first match).
CODE_KINDS = [
    ("Spark's generated classes (janino)", re.compile(r"\.GeneratedClass\b")),
    ("the engine's JVM classes (sse.*)", re.compile(r"^sse\.")),
    ("Parquet", re.compile(r"parquet")),
    ("Arrow", re.compile(r"arrow")),
    ("Janino (compiling generated code)", re.compile(r"janino|commons\.compiler")),
    ("ANTLR (Spark's SQL parser)", re.compile(r"antlr")),
    ("ASM (bytecode reading and writing)", re.compile(r"objectweb\.asm|xbean\.asm")),
    ("Jackson (JSON)", re.compile(r"jackson")),
    ("Hadoop", re.compile(r"org\.apache\.hadoop")),
    ("Delta", re.compile(r"io\.delta")),
    ("Spark SQL", re.compile(r"org\.apache\.spark\.sql")),
    ("Spark core", re.compile(r"org\.apache\.spark")),
    ("Scala library", re.compile(r"^scala\.")),
    ("the JDK", re.compile(r"^(java|javax|jdk|sun|com\.sun)\.")),
]


def code_kind(cls: str) -> str:
    return next((name for name, rx in CODE_KINDS if rx.search(cls)), "other")


def _seconds(duration: str) -> float:
    """An ISO-8601 duration as ``jfr print --json`` writes it (``PT0.012S``, ``PT1M2.5S``)."""
    m = re.fullmatch(r"PT(?:(\d+)H)?(?:(\d+)M)?(?:([\d.]+)S)?", duration)
    if not m:
        return 0.0
    h, mi, sec = m.groups()
    return int(h or 0) * 3600 + int(mi or 0) * 60 + float(sec or 0)


def jit_events(recording: Path) -> tuple[list[dict], list[dict]]:
    """The recording's compilations and deoptimizations, as ``jfr print --json`` gives them."""
    out = subprocess.run([jfr_tool(), "print", "--json", "--events", "jdk.Compilation,jdk.Deoptimization",
                          str(recording)], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"jfr print {recording} failed (exit {out.returncode}): {out.stderr[-500:]}")
    events = json.loads(out.stdout)["recording"]["events"]
    return ([e["values"] for e in events if e["type"] == "jdk.Compilation"],
            [e["values"] for e in events if e["type"] == "jdk.Deoptimization"])


def _method(v: dict | None) -> tuple[str, str]:
    if not v:
        return "?", "?"
    cls = ((v.get("type") or {}).get("name") or "?").replace("/", ".")
    return cls, f"{cls}.{v.get('name', '?')}"


def jit_report(compiles: list[dict], deopts: list[dict], top: int) -> str:
    tiers: collections.Counter = collections.Counter()
    n_tiers: collections.Counter = collections.Counter()
    kinds: collections.Counter = collections.Counter()
    methods: collections.Counter = collections.Counter()
    times: collections.Counter = collections.Counter()
    for c in compiles:
        secs = _seconds(c.get("duration", "PT0S"))
        tier = "C2" if int(c.get("compileLevel", 0)) == 4 else "C1"
        cls, name = _method(c.get("method"))
        tiers[tier] += secs
        n_tiers[tier] += 1
        if tier == "C2":
            kinds[code_kind(cls)] += secs
            methods[name] += secs
            times[name] += 1
    lines = [f"{len(compiles)} compilations: " + ", ".join(
        f"{t} {n_tiers[t]:,} in {tiers[t]:.1f} s" for t in ("C2", "C1"))]
    lines.append("C2's time by what it compiled:")
    lines += [f"  {secs:7.1f} s  {100 * secs / max(tiers['C2'], 1e-9):5.1f} %  {k}" for k, secs in kinds.most_common()]
    lines.append(f"C2's {top} longest methods (total seconds, times compiled):")
    lines += [f"  {secs:7.2f} s  x{times[m]:<3} {m}" for m, secs in methods.most_common(top)]
    reasons = collections.Counter(f"{d.get('reason', '?')} / {d.get('action', '?')}" for d in deopts)
    where = collections.Counter(_method(d.get("method"))[1] for d in deopts)
    lines.append(f"{len(deopts)} deoptimizations, by reason / action:")
    lines += [f"  {c:6}  {r}" for r, c in reasons.most_common(top)]
    lines.append("most deoptimized methods:")
    lines += [f"  {c:6}  {m}" for m, c in where.most_common(top)]
    return "\n".join(lines)


def jit_settings(folder: Path) -> Path:
    """The JDK's ``default`` recording settings with every compilation recorded (threshold 0) and
    deoptimizations without their stacks, and no stack samples."""
    base = jdk_tool("java")
    jfc = (base.resolve().parent.parent if base else Path(os.environ.get("JAVA_HOME", "/"))) / "lib" / "jfr" / "default.jfc"
    if not jfc.is_file():
        raise SystemExit(f"no Flight Recorder settings at {jfc}")
    text = jfc.read_text()
    for event, pattern, repl in (
            ("jdk.Compilation", r'(<event name="jdk.Compilation">\s*<setting name="enabled"[^>]*>)\w+(</setting>\s*'
                                r'<setting name="threshold"[^>]*>)[^<]*', r"\1true\g<2>0 ms"),
            ("jdk.Deoptimization", r'(<event name="jdk.Deoptimization">\s*<setting name="enabled"[^>]*>)\w+'
                                   r'(</setting>\s*<setting name="stackTrace">)\w+', r"\1true\2false"),
            ("jdk.ExecutionSample", r'(<event name="jdk.ExecutionSample">\s*<setting name="enabled"[^>]*>)\w+',
             r"\1false")):
        text, n = re.subn(pattern, repl, text)
        if n != 1:  # (a JDK whose settings file is laid out otherwise: say so, not a partial recording)
            raise SystemExit(f"{jfc}: no setting of {event} in the expected form; cannot record the JIT's work")
    out = folder / "jit.jfc"
    out.write_text(text)
    return out


def sampling_settings(folder: Path, period_ms: int) -> Path:
    """The JDK's ``profile`` recording settings with Java stacks sampled every ``period_ms``."""
    base = jdk_tool("java")
    jfc = (base.resolve().parent.parent if base else Path(os.environ.get("JAVA_HOME", "/"))) / "lib" / "jfr" / "profile.jfc"
    if not jfc.is_file():
        raise SystemExit(f"no Flight Recorder settings at {jfc}")
    text, n = re.subn(r'(<setting name="period" control="method-sampling-java-interval">)[^<]*',
                      rf"\g<1>{period_ms} ms", jfc.read_text())
    if n != 1:
        raise SystemExit(f"{jfc}: no Java sampling period in the expected form; cannot sample every {period_ms} ms")
    out = folder / "sampling.jfc"
    out.write_text(text)
    return out


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


def check_arguments(p: argparse.ArgumentParser) -> None:
    """The arguments naming the check a profile runs, and how many lines to print (also
    pipelines/profile_driver.py's)."""
    p.add_argument("model")
    p.add_argument("--config", default=None)
    p.add_argument("--set", action="append", default=[], metavar="CONST=VALUE")
    p.add_argument("--no-deadlock", action="store_true")
    p.add_argument("--models", type=Path, default=None, help="a folder with schemas/ and actions_sql/")
    p.add_argument("--top", type=int, default=15)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    check_arguments(p)
    p.add_argument("--keep", type=Path, default=None, help="keep the recording in this file")
    p.add_argument("--jit", action="store_true", help="record the JIT compilers' work, not stack samples")
    p.add_argument("--period", type=int, default=None, metavar="MS",
                   help="sample the Java stacks every MS milliseconds (default: the profile settings', 10 to 20)")
    p.add_argument("--from", dest="since", type=float, default=0.0, metavar="SECONDS",
                   help="sum only the samples taken this long after the first")
    args = p.parse_args(argv)
    if args.period is not None and args.period < 1:
        p.error(f"--period {args.period}: at least 1 ms")

    with tempfile.TemporaryDirectory(prefix="sse-jfr-") as tmp:
        recording = args.keep.resolve() if args.keep else Path(tmp) / "run.jfr"
        cmd = [sys.executable, "-m", "engine", *(["--models", str(args.models)] if args.models else []),
               "check", args.model, "--fresh", "--quiet", "--json", "--warehouse", str(Path(tmp) / "wh")]
        cmd += ["--config", args.config] if args.config else []
        for s in args.set:
            cmd += ["--set", s]
        cmd += ["--no-deadlock"] if args.no_deadlock else []
        options = os.environ.get("SSE_JAVA_OPTIONS", JAVA_OPTIONS)
        settings = (jit_settings(Path(tmp)) if args.jit
                    else sampling_settings(Path(tmp), args.period) if args.period else "profile")
        env = {**os.environ, "PYTHONPATH": str(ROOT),
               # (the recorder's start-up message to stderr: stdout is the check's JSON)
               "SSE_JAVA_OPTIONS": f"{options} -Xlog:jfr*=warning:stderr -XX:StartFlightRecording=filename={recording},"
                                   f"settings={settings},dumponexit=true"}
        done = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if done.returncode not in (0, 11, 12):
            print(done.stderr[-3000:], file=sys.stderr)
            return done.returncode
        result = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"{args.model}: {result['result']}, {result['distinct_states']:,} distinct, "
              f"{result['states_generated']:,} generated, depth {result['depth']}, {result['seconds']:.1f} s")
        print(jit_report(*jit_events(recording), args.top) if args.jit else report(samples(recording, since=args.since), args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
