"""Benchmark model checks: wall time, Spark start-up, throughput, per-level fixed cost, memory, bytes.

    python benchmarks/benchmark.py [CASE ...] [--master local[2]] [--cpus N] [--repeat N] [--small 1000] [--no-record]
                                  [--models DIR] [--run-dir DIR] [--sample 5]

A CASE is ``MODEL[:CONFIG][+CONST=VALUE...]``, for example ``ledger_chaining`` (its default
configuration) or ``ledger_chaining+Clients=c1,c2+LedgerLimit=3``. Every case runs fresh, in a
temporary warehouse, in one Spark session (its start-up is paid once and reported with each case).

For each case it prints: the result and TLC's figures (distinct, generated, depth), wall time
(start-up included), Spark start-up, states generated and distinct states per second, the median and worst fixed cost per level (the time of
levels that generated fewer than ``--small`` states: the engine's overhead, not work on states),
CPU seconds of the whole process tree (driver, JVM, Python workers: a figure that stays
meaningful when the machine is shared, unlike wall time), peak resident memory of the JVM driver
and of the Python driver, and the bytes the run wrote. For a case with symmetry, the
canonicalization's cost: the canonical fingerprint's wall time per state (in SQL, as the portable
path computes it, and with the JVM helper, as the accelerator does) against the plain fingerprint's,
each computed again over the run's stored states once the search is done (after a case's last
repeat). The load
average at the start and end is printed too: other processes on the machine inflate wall times.

While a case runs, a thread samples memory every ``--sample`` seconds: the JVM's resident set and
heap in use, and the Python driver's resident set. The run is cut into tenths by time, and each
tenth prints the states stored by its end, the least heap in use (what survived the collections:
the live set) and the most, and the resident sets. Driver memory that stays flat while the stored
states grow is what a state space larger than memory needs.

``--repeat N`` runs each case N times in the one session. The first run is a cold command line's;
the later ones are what a command handed to a running engine server gets (``python -m engine
serve``, engine.platform.server): Spark is up and the JVM has compiled Spark's and the actions' code, so
their wall time has no start-up.

``--cpus N`` runs the benchmark on the first N of the CPUs it may use (its affinity, which the JVM it
starts and that JVM's threads inherit). ``local[1]`` alone runs one task at a time, but the JVM's
collector and JIT compiler threads, and the Python driver, still use the other core; with
``--cpus 1`` the whole run has one core, and the JVM sizes its collector and compiler for one.

The figures are appended to the Delta table ``<warehouse>/_benchmarks`` (``--warehouse``,
default ``<checkout>/warehouse``) so runs can be compared over time; the memory samples go to
``<warehouse>/_benchmark_memory``. ``--models DIR`` takes the models from another folder (the
engine's test models: ``--models tests/models``); ``--run-dir DIR`` keeps the run's tables there
instead of in a temporary folder.
"""
from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.search.loop import check  # noqa: E402
from engine.model.loader import load_model, parse_case, resolve_run  # noqa: E402
from engine.runtime.session import get_spark  # noqa: E402
from engine.settings import Settings  # noqa: E402
from pyspark.sql.types import StructType  # noqa: E402

_TCK = os.sysconf("SC_CLK_TCK")


def _read_stat(path: str) -> tuple[str, list[str]] | None:
    """A process's or thread's ``stat`` file: its name and the fields after it (None once it ended)."""
    try:
        s = Path(path).read_text()
    except OSError:
        return None
    return s[s.index("(") + 1:s.rindex(")")], s[s.rindex(")") + 2:].split()


def _stat_fields(pid: int) -> list[str] | None:
    stat = _read_stat(f"/proc/{pid}/stat")
    return stat[1] if stat else None


def descendants(root: int) -> list[tuple[int, int, list[str]]]:
    """Every live descendant of process ``root``: its pid, its parent's, and its ``stat`` fields."""
    children: dict[int, list[tuple[int, list[str]]]] = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            f = _stat_fields(int(p))
            if f:
                children.setdefault(int(f[1]), []).append((int(p), f))
    found, stack = [], [root]
    while stack:
        parent = stack.pop()
        for pid, f in children.get(parent, []):
            found.append((pid, parent, f))
            stack.append(pid)
    return found


def stat_cpu_seconds(fields: list[str]) -> float:
    """User + system CPU seconds in a process's ``stat`` fields, the children it reaped included."""
    return sum(int(x) for x in fields[11:15]) / _TCK  # utime, stime, cutime, cstime


def cpu_seconds(root: int | None = None) -> float:
    """User+system CPU seconds of a process and all its descendants (reaped children included)."""
    root = root or os.getpid()
    own = stat_cpu_seconds(_stat_fields(root) or ["0"] * 15)
    return own + sum(stat_cpu_seconds(f) for _, _, f in descendants(root))


def peak_rss_bytes(pid: int) -> int:
    """The process's peak resident set (VmHWM); the kernel keeps it since the process started."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def rss_bytes(pid: int) -> int:
    """The process's resident set now (VmRSS)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


# The JVM's threads by what they do, from their names as Linux keeps them (15 characters): Spark's
# tasks, HotSpot's two JIT compilers, the garbage collector's workers; the rest ("other") is the
# driver's own JVM work (planning, code generation, scheduling, Py4J) and the JVM's housekeeping.
THREAD_KINDS = (("tasks", "Executor task"), ("jit_c2", "C2 CompilerThre"), ("jit_c1", "C1 CompilerThre"),
                ("gc", "GC Thread"))
THREAD_KIND_NAMES = {"tasks": "tasks", "jit_c2": "C2 JIT", "jit_c1": "C1 JIT", "gc": "GC", "other": "other"}


def thread_kind(name: str) -> str:
    return next((kind for kind, prefix in THREAD_KINDS if name.startswith(prefix)), "other")


def thread_cpu(pid: int) -> dict[int, tuple[str, float]]:
    """Each live thread of process ``pid``: its name and its user+system CPU seconds."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        stat = _read_stat(f"/proc/{pid}/task/{tid}/stat")
        if stat:  # not ended since the listing
            name, f = stat
            out[int(tid)] = (name, (int(f[11]) + int(f[12])) / _TCK)
    return out


class MemorySampler(threading.Thread):
    """Samples the JVM's heap in use and resident set, and the Python driver's, every ``every`` s; and
    every second the CPU time of each of the JVM's threads (HotSpot ends idle compiler threads: one
    that ends keeps the figure of its last sample)."""

    def __init__(self, spark, jvm_pid: int, every: float):
        super().__init__(daemon=True)
        self.bean = spark._jvm.java.lang.management.ManagementFactory.getMemoryMXBean()
        self.jvm_pid, self.every = jvm_pid, every
        self.samples: list[dict] = []
        self.halt = threading.Event()
        self.t0 = time.time()
        self.threads_at_start = thread_cpu(jvm_pid)
        self.threads = dict(self.threads_at_start)

    def sample(self) -> None:
        self.samples.append({"t_s": time.time() - self.t0, "heap_used": int(self.bean.getHeapMemoryUsage().getUsed()),
                             "jvm_rss": rss_bytes(self.jvm_pid), "py_rss": rss_bytes(os.getpid())})

    def run(self) -> None:
        due = self.every
        while not self.halt.wait(min(1.0, self.every)):
            self.threads.update(thread_cpu(self.jvm_pid))
            if time.time() - self.t0 >= due:
                self.sample()
                due += self.every

    def stop(self) -> list[dict]:
        self.halt.set()
        self.join()
        self.threads.update(thread_cpu(self.jvm_pid))
        self.sample()
        return self.samples

    def spent(self) -> Iterator[tuple[str, float]]:
        """Each of the JVM's threads: its name and the CPU seconds it spent since the sampler was made."""
        for tid, (name, cpu) in self.threads.items():
            before = self.threads_at_start.get(tid)
            yield name, cpu - (before[1] if before and before[0] == name else 0.0)

    def cpu_by_kind(self) -> dict[str, float]:
        """CPU seconds the JVM's threads spent since the sampler was made, by kind (THREAD_KINDS)."""
        out = dict.fromkeys(THREAD_KIND_NAMES, 0.0)
        for name, cpu in self.spent():
            out[thread_kind(name)] += cpu
        return out

    def other_by_name(self, top: int = 6) -> list[tuple[str, float]]:
        """The "other" threads' CPU seconds since the sampler was made, by name with its trailing
        number dropped ("Thread-12" and "Thread-3" are "Thread-"), the ``top`` largest first."""
        out: dict[str, float] = {}
        for name, cpu in self.spent():
            if thread_kind(name) == "other":
                key = re.sub(r"\d+$", "", name) or name
                out[key] = out.get(key, 0.0) + cpu
        return sorted(out.items(), key=lambda kv: -kv[1])[:top]


def memory_tenths(samples: list[dict], levels: list[dict], t0: float, search_s: float) -> list[dict]:
    """The samples cut into tenths of the search (``t0`` its start, seconds since the epoch), each
    with the states stored when it ended (the levels committed by then)."""
    import calendar
    committed = [(calendar.timegm(time.strptime(lv["committed_at"], "%Y-%m-%dT%H:%M:%SZ")), lv["distinct_total"])
                 for lv in levels]
    out = []
    for k in range(10):
        lo, hi = search_s * k / 10, search_s * (k + 1) / 10
        part = ([s for s in samples if lo <= s["t_s"] < hi]
                or [min(samples, key=lambda s: abs(s["t_s"] - hi))])
        out.append({"tenth": k + 1, "until_s": hi,
                    "stored": max([n for at, n in committed if at <= t0 + hi + 1] or [0]),
                    "heap_min": min(s["heap_used"] for s in part), "heap_max": max(s["heap_used"] for s in part),
                    "jvm_rss": max(s["jvm_rss"] for s in part), "py_rss": max(s["py_rss"] for s in part)})
    return out


def dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())


def git_commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def pin_cpus(n: int) -> list[int]:
    """Restrict this process, and every thread and process it starts from now on, to the first ``n``
    CPUs of its affinity; the CPUs kept."""
    allowed = sorted(os.sched_getaffinity(0))
    if not 1 <= n <= len(allowed):
        raise ValueError(f"--cpus {n}: this process may use {len(allowed)} CPUs ({allowed})")
    os.sched_setaffinity(0, allowed[:n])
    return allowed[:n]


def run_case(spark, case: str, startup: float, small: int, deadlock: bool | None,
             models: Path | None = None, run_dir: Path | None = None, sample_every: float = 5.0,
             settings: Settings | None = None, canonical: bool = True) -> dict:
    """One run of ``case``, measured; with symmetry and ``canonical``, the canonicalization's cost
    after it (``canonical_cost``)."""
    settings = settings or Settings()
    model_name, config, sets = parse_case(case)
    spec = resolve_run(load_model(model_name, models), config, sets, None, deadlock)
    jvm_pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="sse-bench-") as tmp:
        wh = Path(run_dir) if run_dir else Path(tmp)
        sampler = MemorySampler(spark, jvm_pid, sample_every)
        c0, t0 = cpu_seconds(), time.time()
        sampler.t0 = t0
        sampler.start()
        try:
            out = check(spec, wh, settings=settings, spark=spark, fresh=True)
        finally:
            samples = sampler.stop()
        search = time.time() - t0
        cpu = cpu_seconds() - c0
        by_kind = sampler.cpu_by_kind()
        other = sampler.other_by_name()
        from deltalake import DeltaTable
        levels = DeltaTable(out.tables["levels"]).to_pyarrow_table().to_pylist()
        written = dir_bytes(wh / spec.model.name / spec.run_id)
        canon = (canonical_cost(spark, spec, wh / spec.model.name / spec.run_id, settings)
                 if spec.symmetry and canonical else dict.fromkeys(CANON_KEYS))
    small_levels = [r["seconds"] for r in levels if r["generated"] < small] or [float("nan")]
    every = [r["seconds"] for r in levels] or [float("nan")]
    return {
        "case": case, "model": spec.model.name, "config": spec.config,
        "constants": " ".join(f"{k}={v}" for k, v in sorted(spec.constants.items())),
        "result": out.result, "distinct": out.distinct_states, "generated": out.states_generated,
        "depth": out.depth, "levels": len(levels),
        "wall_s": startup + search, "startup_s": startup,
        "cpus": len(os.sched_getaffinity(0)),
        "jvm_cpus": int(spark._jvm.java.lang.Runtime.getRuntime().availableProcessors()),
        "search_s": search, "cpu_s": cpu,
        **{f"cpu_{kind}_s": v for kind, v in by_kind.items()}, "cpu_python_s": cpu - sum(by_kind.values()),
        "cpu_other_top": ", ".join(f"{n} {v:.1f}" for n, v in other),
        "distinct_per_s": out.distinct_states / search, "generated_per_s": out.states_generated / search,
        "fixed_median_s": statistics.median(small_levels), "fixed_worst_s": max(small_levels),
        "fixed_levels": sum(1 for r in levels if r["generated"] < small),
        "level_median_s": statistics.median(every),
        "jvm_peak_rss": peak_rss_bytes(jvm_pid), "py_peak_rss": peak_rss_bytes(os.getpid()),
        "bytes_written": written, "load_start": load0, "load_end": os.getloadavg()[0],
        "heap_live_max": max(s["heap_used"] for s in samples),
        "memory": memory_tenths(samples, levels, t0, search), "samples": samples,
        **canon,
    }


# Every row has each of canonical_cost's figures (None where not measured): the recorded table takes
# its columns from the first row.
CANON_KEYS = ("canon_states", "plain_fp_us", "canonical_fp_us", "canonical_jvm_fp_us")


def fingerprint_variants(spark, schema: StructType, model, sets: dict[str, list[str]], using: str,
                         settings: Settings) -> dict[str, list[list[str]]]:
    """The projections giving ``_fp`` and ``_fp2`` three ways: ``plain`` (the state as it is),
    ``canonical`` (symmetry's smallest image in SQL, the portable path's) and, where the JVM helper
    is loaded and orders the state's types, ``canonical_jvm`` (the accelerator's)."""
    from engine.search.encoding import fingerprint_sql
    import engine.runtime.jvm_ext as jvm_ext
    from engine.search.symmetry import canonical_fingerprint_stages, helper_supports
    fp1, fp2 = fingerprint_sql([(f.name, f.dataType) for f in schema.fields], using=using)
    variants = {
        "plain": [[f"{fp1} AS _fp", f"{fp2} AS _fp2"]],
        "canonical": canonical_fingerprint_stages(schema, model.symmetry_shapes, sets, using=using,
                                                  literal_permutations=settings.literal_permutations),
    }
    if jvm_ext.has_class(spark, "Canonical") and helper_supports(schema):
        variants["canonical_jvm"] = canonical_fingerprint_stages(schema, model.symmetry_shapes, sets, using=using,
                                                                 helper=True)
    return variants


def canonical_cost(spark, spec, run_root: Path, settings: Settings, rounds: int = 2) -> dict:
    """What symmetry's canonical fingerprint costs a state, against the plain fingerprint: both
    computed over the run's stored states (read from its Delta table and held in Spark's memory),
    each job run once to compile and warm its code, then ``rounds`` times; the best round's wall
    time per state. Measured apart from the search, so the figure is the canonicalization's own and
    not the actions'."""
    from engine.search.encoding import JSON
    from engine.store.deltaio import read_delta
    from engine.store.runs import RunStore
    using = RunStore.stored_spec(run_root).get("fingerprint") or JSON
    stored = read_delta(spark, str(run_root / "states"), None, settings)
    schema = StructType([f for f in stored.schema.fields if f.name in spec.model.variable_names])
    states = stored.select(*schema.fieldNames()).localCheckpoint(eager=True)
    n = states.count()
    variants = fingerprint_variants(spark, schema, spec.model, {s: spec.constants[s] for s in spec.model.symmetry},
                                    using, settings)
    out = {**dict.fromkeys(CANON_KEYS), "canon_states": n}
    for name, stages in variants.items():
        df = states
        for stage in stages:
            df = df.selectExpr("*", *stage)
        df = df.select("_fp", "_fp2")
        times = []
        for _ in range(rounds + 1):
            t = time.perf_counter()
            df.write.format("noop").mode("overwrite").save()
            times.append(time.perf_counter() - t)
        out[f"{name}_fp_us"] = min(times[1:]) / max(n, 1) * 1e6
    states.unpersist()
    return out


def show(r: dict, small: int) -> None:
    mib = 1 << 20
    again = f"  [repeat {r['repeat']}: same session, no start-up]" if r.get("repeat") else ""
    print(f"case               {r['case']}  ({r['model']}:{r['config']} {r['constants']}){again}")
    print(f"result             {r['result']}: {r['distinct']:,} distinct, {r['generated']:,} generated, "
          f"depth {r['depth']}")
    print(f"wall time          {r['wall_s']:.1f} s (Spark start-up {r['startup_s']:.1f} s, search {r['search_s']:.1f} s; "
          ")")
    print(f"cpu time           {r['cpu_s']:.1f} s (driver, JVM and Python workers, search only), "
          f"on {r['cpus']} of {os.cpu_count()} CPUs (the JVM sees {r['jvm_cpus']})")
    print("cpu by thread      " + ", ".join(f"{THREAD_KIND_NAMES[k]} {r[f'cpu_{k}_s']:.1f} s" for k in THREAD_KIND_NAMES)
          + f" (the JVM's threads); Python {r['cpu_python_s']:.1f} s")
    if r.get("cpu_other_top"):
        print(f"other threads      {r['cpu_other_top']} (CPU-s, by thread name)")
    print(f"throughput         {r['generated_per_s']:,.0f} generated/s, {r['distinct_per_s']:,.0f} distinct/s")
    print(f"fixed cost/level   median {r['fixed_median_s']:.3f} s, worst {r['fixed_worst_s']:.3f} s "
          f"({r['fixed_levels']} of {r['levels']} levels generated < {small:,} states); "
          f"median level {r['level_median_s']:.3f} s")
    if r.get("canon_states"):
        jvm = (f", {r['canonical_jvm_fp_us']:.1f} us with the JVM helper (the accelerator's)"
               if r.get("canonical_jvm_fp_us") else "")
        print(f"canonicalization   the canonical fingerprint {r['canonical_fp_us']:.1f} us a state in SQL (the portable "
              f"path's){jvm}, against {r['plain_fp_us']:.1f} us for the plain one (wall time per state over "
              f"the run's {r['canon_states']:,} stored states, every task slot busy)")
    print(f"peak memory        JVM driver {r['jvm_peak_rss'] / mib:,.0f} MiB, Python driver {r['py_peak_rss'] / mib:,.0f} MiB")
    print(f"bytes written      {r['bytes_written'] / mib:,.1f} MiB")
    print("memory by tenth    until s   states stored   heap min..max MiB   JVM RSS MiB   Python RSS MiB")
    for m in r["memory"]:
        print(f"  {m['tenth']:>2}              {m['until_s']:>7.0f}   {m['stored']:>13,}   "
              f"{m['heap_min'] / mib:>7,.0f}..{m['heap_max'] / mib:<7,.0f}   {m['jvm_rss'] / mib:>11,.0f}   "
              f"{m['py_rss'] / mib:>14,.0f}")
    print(f"load average       {r['load_start']:.1f} at start, {r['load_end']:.1f} at end "
          f"({os.cpu_count()} cores; above that, wall times are inflated by other processes)")
    print(flush=True)


def record(rows: list[dict], warehouse: Path, master: str, table: str = "benchmarks") -> Path:
    """Append ``rows`` with the run's commit, master and host to the Delta table ``<warehouse>/_<table>``."""
    import pyarrow as pa
    from deltalake import write_deltalake
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    extra = {"at": stamp, "git_commit": git_commit(), "master": master, "host": platform.node(),
             "cores": os.cpu_count()}
    path = warehouse / f"_{table}"
    write_deltalake(str(path), pa.Table.from_pylist([{**extra, **r} for r in rows]), mode="append",
                    schema_mode="merge", name=table)
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("cases", nargs="*", default=["ledger_chaining"], help="MODEL[:CONFIG][+CONST=VALUE...]")
    p.add_argument("--master", default=None, help="Spark master (default local[2], or SSE_SPARK_MASTER)")
    p.add_argument("--cpus", type=int, default=None,
                   help="run on the first N CPUs only (the JVM and its threads included)")
    p.add_argument("--small", type=int, default=1000,
                   help="levels that generated fewer states than this count as fixed cost")
    p.add_argument("--no-deadlock", action="store_true")
    p.add_argument("--warehouse", type=Path, default=ROOT / "warehouse",
                   help="where the _benchmarks Delta table is appended to")
    p.add_argument("--no-record", action="store_true", help="print only; do not append to _benchmarks")
    p.add_argument("--models", type=Path, default=None,
                   help="folder with schemas/ and actions_sql/ (default: this checkout); tests/models has "
                        "the engine's test models")
    p.add_argument("--run-dir", type=Path, default=None,
                   help="keep the run's tables in this folder (default: a temporary folder, removed)")
    p.add_argument("--sample", type=float, default=5.0, help="seconds between memory samples")
    p.add_argument("--repeat", type=int, default=1,
                   help="run each case this many times in the same session: the later runs are what a "
                        "running engine server (python -m engine serve) gives, with no Spark start-up and the "
                        "JVM's code compiled")
    args = p.parse_args(argv)
    if args.repeat < 1:
        p.error(f"--repeat {args.repeat}: at least 1")
    if args.cpus is not None:
        try:
            pin_cpus(args.cpus)  # before the JVM starts: it inherits the affinity
        except ValueError as exc:
            p.error(str(exc))

    t0 = time.time()
    settings = Settings.from_env()
    if args.master:
        settings = settings.replace(master=args.master)
    spark = get_spark(settings)
    startup = time.time() - t0
    master = spark.sparkContext.master
    rows = []
    for case in args.cases:
        for i in range(args.repeat):
            # A repeat's wall time has no start-up: the session is up, as in an engine server.
            # The canonicalization is measured after the last repeat only: its jobs compile code of their
            # own (the SQL's images), which the JIT would still be compiling during the next repeat.
            r = run_case(spark, case, startup if i == 0 else 0.0, args.small, False if args.no_deadlock else None,
                         args.models, args.run_dir, args.sample, settings, canonical=i == args.repeat - 1)
            r["repeat"] = i
            show(r, args.small)
            rows.append(r)
    if not args.no_record:
        at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        memory = [{"case": r["case"], "run_at": at, **s} for r in rows for s in r.pop("samples")]
        for r in rows:
            r.pop("memory")
        print(f"recorded in        {record(rows, args.warehouse, master)}")
        if memory:
            print(f"memory samples in  {record(memory, args.warehouse, master, table='benchmark_memory')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
