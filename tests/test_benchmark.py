"""The benchmark script's helpers (no Spark): case parsing, process CPU time, the _benchmarks table."""
import json
import os

import pytest
from deltalake import DeltaTable

from conftest import ROOT, load_pipeline, short_run_env

bench = load_pipeline("benchmark")


def test_case_names_model_config_and_constants():
    assert bench.parse_case("ledger_chaining") == ("ledger_chaining", None, [])
    assert bench.parse_case("ledger_chaining:lc_c3_lim4+Clients=c1,c2+LedgerLimit=3") == \
        ("ledger_chaining", "lc_c3_lim4", ["Clients=c1,c2", "LedgerLimit=3"])


def test_cpu_seconds_counts_this_process_work():
    before = bench.cpu_seconds()
    x = 0
    for i in range(3_000_000):
        x += i * i
    assert bench.cpu_seconds() - before > 0.05
    assert bench.peak_rss_bytes(os.getpid()) > 10 << 20


def test_figures_are_appended_to_a_delta_table(tmp_path):
    row = {"case": "m", "distinct": 3, "wall_s": 1.5}
    path = bench.record([row], tmp_path, "local[2]")
    bench.record([{**row, "distinct": 4}], tmp_path, "local[1]")
    rows = DeltaTable(str(path)).to_pyarrow_table().to_pylist()
    assert sorted((r["distinct"], r["master"]) for r in rows) == [(3, "local[2]"), (4, "local[1]")]
    assert all(r["at"] and r["cores"] == os.cpu_count() for r in rows)


def _profile(env_extra):
    import re
    import subprocess
    import sys
    from conftest import TEST_MODELS
    # Spark's own cache alone: classes kept on disk by an earlier run (engine.runtime.session's code cache)
    # would be defined, not compiled, and counted by neither figure.
    env = short_run_env(SSE_CODE_CACHE="off", **env_extra)
    res = subprocess.run([sys.executable, str(ROOT / "pipelines" / "profile_level.py"), "tokens",
                          "--models", str(TEST_MODELS), "--repeat", "2"],
                         capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    return [int(n) for n in re.findall(r"compiled (\d+) classes", res.stdout)]


def test_a_level_compiles_its_generated_code_once_per_run():
    """Spark's code cache must hold a whole action union: with one too small (8 classes, Spark's
    default is 100, big models need 180), every level compiles everything again."""
    first, second = _profile({})
    assert first > 8 and second == 0
    first, second = _profile({"SSE_CODEGEN_CACHE": "8"})
    assert first > 8 and second >= first // 2


def test_memory_is_reported_by_tenth_of_the_search_with_the_states_stored_by_then():
    import time
    t0 = 1_700_000_000.0
    samples = [{"t_s": float(t), "heap_used": 100 + t, "jvm_rss": 1000 + t, "py_rss": 50} for t in range(100)]
    stamp = lambda s: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t0 + s))  # noqa: E731
    levels = [{"depth": 1, "distinct_total": 1, "committed_at": stamp(5)},
              {"depth": 2, "distinct_total": 7, "committed_at": stamp(45)},
              {"depth": 3, "distinct_total": 20, "committed_at": stamp(95)}]
    tenths = bench.memory_tenths(samples, levels, t0, 100.0)
    assert [m["tenth"] for m in tenths] == list(range(1, 11))
    assert [m["stored"] for m in tenths] == [1, 1, 1, 1, 7, 7, 7, 7, 7, 20]
    assert (tenths[0]["heap_min"], tenths[0]["heap_max"], tenths[0]["jvm_rss"]) == (100, 109, 1009)
    assert (tenths[9]["heap_min"], tenths[9]["heap_max"]) == (190, 199)


@pytest.mark.long  # (a profiling tool run end to end: README, Tests)
def test_core_scaling_times_both_masters_and_prints_the_ratio():
    """pipelines/core_scaling.py runs its job in a local[1] and a local[2] process and prints the
    ratio of the warm medians; one repetition (no warm run) is refused."""
    import re
    import subprocess
    import sys
    script = str(ROOT / "pipelines" / "core_scaling.py")
    res = subprocess.run([sys.executable, script, "--repeat", "1"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and "--repeat must be at least 2" in res.stderr
    res = subprocess.run([sys.executable, script, "--rows", "20000", "--repeat", "2"],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    lines = res.stdout.splitlines()
    warm = {}
    for master in ("local[1]", "local[2]"):
        line = next(x for x in lines if x.startswith(master))
        times = [float(t) for t in re.findall(r"([\d.]+) s", line.split("(")[0])]
        assert len(times) == 2
        warm[master] = float(re.search(r"warm median ([\d.]+) s", line).group(1))
        assert warm[master] == times[1]
    ratio = float(re.search(r"local\[1\] / local\[2\]: ([\d.]+)x", res.stdout).group(1))
    w1, w2 = warm["local[1]"], warm["local[2]"]  # printed to the millisecond, the ratio to 0.01
    assert (w1 - 0.0005) / (w2 + 0.0005) - 0.005 <= ratio <= (w1 + 0.0005) / (w2 - 0.0005) + 0.005


def test_event_log_balance_measures_idle_cores_and_a_lone_task(tmp_path):
    import json
    balance = load_pipeline("event_log_balance")
    events = [
        {"Event": "SparkListenerJobStart", "Job ID": 0, "Submission Time": 1000, "Stage IDs": [0]},
        {"Event": "SparkListenerStageSubmitted", "Stage Info": {"Stage ID": 0, "Stage Name": "parquet at x"}},
        # Two tasks over a 10 s job: both run until 6 s, then one alone for 4 s.
        {"Event": "SparkListenerTaskEnd", "Stage ID": 0, "Task Info": {"Launch Time": 1000, "Finish Time": 7000}},
        {"Event": "SparkListenerTaskEnd", "Stage ID": 0, "Task Info": {"Launch Time": 1000, "Finish Time": 11000}},
        {"Event": "SparkListenerJobEnd", "Job ID": 0, "Completion Time": 11000},
        # A short job, below --min-wall.
        {"Event": "SparkListenerJobStart", "Job ID": 1, "Submission Time": 12000, "Stage IDs": [1]},
        {"Event": "SparkListenerTaskEnd", "Stage ID": 1, "Task Info": {"Launch Time": 12000, "Finish Time": 12100}},
        {"Event": "SparkListenerJobEnd", "Job ID": 1, "Completion Time": 12100},
    ]
    folder = tmp_path / "app-1"
    folder.mkdir()
    (folder / "events_1_app-1").write_text("\n".join(json.dumps(e) for e in events) + "\n{\"Event\": \"cut")
    rows = balance.balance(balance.events_file(tmp_path), cores=2, min_wall=1.0)
    assert rows == [{"job": 0, "stages": ["parquet at x"], "wall_s": 10.0, "tasks": 2, "busy": 0.8,
                     "alone_s": 4.0, "max_task_s": 10.0}]


def test_event_log_balance_measures_the_time_no_job_runs(tmp_path, capsys):
    """--gaps: the time from the first job's start to the last one's end with no job running (jobs
    that overlap count once), and each stretch of at least the given seconds with the call sites of
    the jobs around it."""
    import json
    balance = load_pipeline("event_log_balance")

    def job(jid, start, end, site):
        return [{"Event": "SparkListenerJobStart", "Job ID": jid, "Submission Time": start, "Stage IDs": [jid],
                 "Properties": {"callSite.short": site}},
                {"Event": "SparkListenerJobEnd", "Job ID": jid, "Completion Time": end}]
    # 0-2 s a; 1-5 s b (overlaps a); 6.5-7 s c; 7.1-8 s d; 10-11 s e (and a job never ended)
    events = (job(0, 1000, 3000, "a") + job(1, 2000, 6000, "b") + job(2, 7500, 8000, "c")
              + job(3, 8100, 9000, "d") + job(4, 11000, 12000, "e")
              + [{"Event": "SparkListenerJobStart", "Job ID": 5, "Submission Time": 12500, "Stage IDs": []}])
    folder = tmp_path / "app-1"
    folder.mkdir()
    (folder / "events_1_app-1").write_text("\n".join(json.dumps(e) for e in events) + "\n")
    found = balance.idle(balance.events_file(tmp_path), min_gap=1.0)
    assert found["span_s"] == 11.0 and found["stretches"] == 3
    assert abs(found["idle_s"] - 3.6) < 1e-9
    assert found["gaps"] == [{"at_s": 5.0, "gap_s": 1.5, "after": "b", "before": "c"},
                             {"at_s": 8.0, "gap_s": 2.0, "after": "d", "before": "e"}]
    assert balance.main([str(tmp_path), "--gaps", "1.5"]) == 0
    out = capsys.readouterr().out
    assert "no job running: 3.6 s in 3 stretches, 2 of at least 1.5 s:" in out
    assert "after [d]  before [e]" in out


@pytest.mark.long  # (a profiling tool run end to end: README, Tests)
def test_sse_event_log_writes_spark_s_event_log_for_a_check(tmp_path):
    import subprocess
    import sys

    from conftest import TEST_MODELS
    from platform_util import OK_ARGS

    env = short_run_env(SSE_EVENT_LOG=str(tmp_path / "events"))
    res = subprocess.run([sys.executable, "-m", "engine", "--models", str(TEST_MODELS), "check", "counter", *OK_ARGS,
                          "--warehouse", str(tmp_path / "wh"), "--quiet", "--fresh"],
                         capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    balance = load_pipeline("event_log_balance")
    rows = balance.balance(balance.events_file(tmp_path / "events"), min_wall=0)
    assert rows and all(r["tasks"] >= 1 and 0 < r["busy"] for r in rows)
    assert any("toArrow" in s for r in rows for s in r["stages"])


def test_the_benchmark_runs_a_case_on_the_cpus_it_is_given(tmp_path):
    """A case end to end on one CPU: the counter's figures from the tests' own breadth-first search,
    and the JVM the benchmark started sees one processor."""
    import re
    import subprocess
    import sys
    from conftest import TEST_MODELS
    from test_counter import bfs
    want = bfs({1, 2}, 5, deadlock=False)
    script = str(ROOT / "pipelines" / "benchmark.py")
    res = subprocess.run([sys.executable, script, "counter:no_deadlock+Max=5", "--models", str(TEST_MODELS),
                          "--master", "local[1]", "--cpus", "1", "--warehouse", str(tmp_path), "--repeat", "2"],
                         capture_output=True, text=True, env=short_run_env(), timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.count(f"result             ok: {want['distinct']:,} distinct, {want['generated']:,} generated, "
                            f"depth {want['depth']}") == 2
    assert re.search(r"on 1 of \d+ CPUs \(the JVM sees 1\)", res.stdout), res.stdout
    # the repeat runs in the same session: no start-up in its wall time
    assert "[repeat 1: same session, no start-up]" in res.stdout
    assert re.search(r"wall time .*\(Spark start-up 0\.0 s,", res.stdout.split("[repeat 1")[1]), res.stdout
    rows = sorted(DeltaTable(str(tmp_path / "_benchmarks")).to_pyarrow_table().to_pylist(), key=lambda r: r["repeat"])
    assert [r["repeat"] for r in rows] == [0, 1] and rows[0]["startup_s"] > 0 and rows[1]["startup_s"] == 0
    row = rows[0]
    assert (row["distinct"], row["depth"], row["cpus"], row["jvm_cpus"], row["master"]) == \
        (want["distinct"], want["depth"], 1, 1, "local[1]")
    # the JVM's threads by kind: Spark's tasks did work, and no kind took more than the whole run
    assert "cpu by thread      tasks " in res.stdout, res.stdout
    kinds = [row[f"cpu_{k}_s"] for k in ("tasks", "jit_c2", "jit_c1", "gc", "other")]
    assert row["cpu_tasks_s"] > 0 and all(k >= 0 for k in kinds) and sum(kinds) <= row["cpu_s"] + 0.5, row
    # the "other" threads by name, largest first, within what "other" took in all
    top = [(n, float(v)) for n, v in (part.rsplit(" ", 1) for part in row["cpu_other_top"].split(", "))]
    assert top and [v for _, v in top] == sorted((v for _, v in top), reverse=True), row["cpu_other_top"]
    assert sum(v for _, v in top) <= row["cpu_other_s"] + 0.05 * len(top), (top, row["cpu_other_s"])
    assert not any(n[-1].isdigit() for n, _ in top), top
    assert f"other threads      {row['cpu_other_top']} (CPU-s, by thread name)" in res.stdout, res.stdout
    res = subprocess.run([sys.executable, script, "--cpus", str(len(os.sched_getaffinity(0)) + 1), "--no-record"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and f"may use {len(os.sched_getaffinity(0))} CPUs" in res.stderr


@pytest.mark.long  # (a profiling tool run end to end: README, Tests)
def test_profile_jfr_sums_a_check_s_flight_recording(tmp_path, capsys):
    """A check of the test counter under Flight Recorder: its result, then its samples by thread and
    by kind of work, the fingerprint's bytes among them."""
    from conftest import TEST_MODELS
    jfr = load_pipeline("profile_jfr")
    kept = tmp_path / "run.jfr"
    assert jfr.main(["counter", "--models", str(TEST_MODELS), "--config", "no_deadlock", "--set", "Steps=1,2",
                     "--set", "Max=12", "--keep", str(kept)]) == 0
    out = capsys.readouterr().out
    assert "counter: ok, 609 distinct" in out and "depth 13" in out  # F(15) - 1 states
    assert "samples by thread: " in out and "Spark tasks" in out
    assert kept.stat().st_size > 100_000
    found = jfr.samples(kept)
    assert found and all(frames for _, frames in found)
    assert {jfr.thread_group(t) for t, _ in found} >= {"Spark tasks", "driver (Py4J calls, planning)"}
    # Whole stacks (jfr print keeps 5 frames unless told): a task's samples reach its thread's entry.
    tasks = [frames for t, frames in found if t.startswith(jfr.TASK_THREAD)]
    assert max(len(f) for f in tasks) > 5
    assert any(f[-1] == "java.lang.Thread.run" and any("Executor$TaskRunner.run" in x for x in f) for f in tasks)
    # --from: the samples taken later than that (the first seconds are Spark's start-up), none after the end
    later = jfr.samples(kept, since=3.0)
    assert 0 < len(later) < len(found) and jfr.samples(kept, since=3600.0) == []
    # --period: the JDK's profile settings with Java stacks sampled that often
    jfc = jfr.sampling_settings(tmp_path, 1).read_text()
    assert '<setting name="period" control="method-sampling-java-interval">1 ms</setting>' in jfc
    with pytest.raises(SystemExit) as exc:
        jfr.main(["counter", "--period", "0"])
    assert exc.value.code == 2 and "--period 0: at least 1 ms" in capsys.readouterr().err


@pytest.mark.long  # (a profiling tool run end to end: README, Tests)
def test_profile_driver_counts_a_small_level_s_calls_into_the_jvm():
    """The test counter's levels 3 to 6 profiled on the driver: the run's result, the levels' time,
    and its Py4J round trips a level, few (65 a small level of ledger chaining before 2026-11-26
    afternoon); a bad range of levels is refused."""
    import subprocess
    import sys
    from conftest import TEST_MODELS
    script = str(ROOT / "pipelines" / "profile_driver.py")
    res = subprocess.run([sys.executable, script, "counter", "--models", str(TEST_MODELS), "--config", "no_deadlock",
                          "--set", "Steps=1,2", "--set", "Max=9", "--levels", "3-6"],
                         capture_output=True, text=True, env=short_run_env(), timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "counter: ok, 143 distinct" in res.stdout and "depth 10" in res.stdout  # F(12) - 1 states
    assert "levels [3, 4, 5, 6] on the driver: " in res.stdout
    per_level = float(res.stdout.split("Py4J round trips: ")[1].split(" a level")[0])
    assert 1 <= per_level <= 25, res.stdout
    assert "collect_arrow" in res.stdout and "the main thread (cProfile, wall time):" in res.stdout
    res = subprocess.run([sys.executable, script, "counter", "--levels", "9-3"], capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 2 and "'9-3': expected depths from 1 up" in res.stderr


def test_fingerprint_cost_times_both_schemes_over_a_run_s_states(counter_ok, spark, capsys):
    wh, res = counter_ok
    cost = load_pipeline("fingerprint_cost")
    assert cost.main([str(wh / "counter" / res["run_id"]), "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "counter (no_deadlock): 20 stored states, 2 variables" in out
    assert "row-bytes " in out and "json " in out and out.count("(20 distinct)") == 2 and "no fingerprint" in out
    assert cost.main([str(wh)]) == 2  # not a run's folder


def test_plan_union_times_the_branches_planned_one_way_and_the_other(spark, capsys):
    """pipelines/plan_union.py plans the tokens model's union by part on one thread and on two, in
    this process's session, prints each repetition's seconds both ways and finds the same successors;
    a single thread to compare with is refused."""
    import re
    plan_union = load_pipeline("plan_union")
    models = str(ROOT / "tests" / "models")
    with pytest.raises(SystemExit) as exc:
        plan_union.main(["tokens", "--models", models, "--threads", "1"], spark=spark)
    assert exc.value.code == 2 and "--threads at least 2" in capsys.readouterr().err
    before = os.environ.get("SSE_PLANNING_THREADS")
    assert plan_union.main(["tokens", "--models", models, "--repeat", "2"], spark=spark) == 0
    out = capsys.readouterr().out
    assert os.environ.get("SSE_PLANNING_THREADS") == before
    assert out.startswith("tokens (default): 3 actions")
    reps = re.findall(r"repetition (\d): one branch after the other ([\d.]+) s, on 2 threads ([\d.]+) s", out)
    assert [r[0] for r in reps] == ["1", "2"] and all(float(a) > 0 and float(b) > 0 for _, a, b in reps)
    n = re.search(r"successors: (\d+) one way, (\d+) the other, the same", out)
    assert n and n.group(1) == n.group(2) and int(n.group(1)) > 0


def test_versus_tlc_reads_tlcs_figures_and_its_findings():
    """TLC's own output: the figures of a completed run (``tests/tlc_output/lc_c3_lim4.txt``, as TLC
    printed it for the oracle's configuration on 2026-11-27), an invariant from its counterexample
    (the oracle's ``bk_v413.txt``), and output with no result, refused with its last lines."""
    from test_ledger_chaining import TLC_DEPTH, TLC_DISTINCT, TLC_GENERATED
    vs = load_pipeline("versus_tlc")
    done = vs.tlc_figures((ROOT / "tests" / "tlc_output" / "lc_c3_lim4.txt").read_text())
    assert (done.result, done.distinct, done.generated, done.depth) == ("ok", TLC_DISTINCT, TLC_GENERATED, TLC_DEPTH)
    trace = ROOT.parent / "shared" / "oracle" / "traces" / "bk_v413.txt"
    if trace.exists():
        found = vs.tlc_figures(trace.read_text())
        assert (found.result, found.distinct, found.depth) == \
            ("invariant_violated:NoDivergenceBetweenWriterAndMetaData", None, None)
    with pytest.raises(ValueError, match=r"TLC printed no result; its last lines:\nTLC2 Version 2.19\nStarting\.\.\. "):
        vs.tlc_figures("TLC2 Version 2.19\nStarting... (2026-11-27 09:18:48)\n")
    # The engine's JSON against TLC's figures: the same, then a count apart.
    engine = {"result": "ok", "violated_invariant": None, "distinct_states": TLC_DISTINCT,
              "states_generated": TLC_GENERATED, "depth": TLC_DEPTH}
    assert vs.disagreement(done, vs.engine_figures(json.dumps(engine))) is None
    engine["distinct_states"] -= 1
    assert vs.disagreement(done, vs.engine_figures(json.dumps(engine))) == (
        f"TLC: {TLC_DISTINCT:,} distinct, {TLC_GENERATED:,} generated, depth {TLC_DEPTH}; engine: "
        f"{TLC_DISTINCT - 1:,} distinct, {TLC_GENERATED:,} generated, depth {TLC_DEPTH}")
    # TLC's depth one over the engine's: its workers' overshoot with 2 of them, a disagreement with 1;
    # an engine deeper than TLC disagrees either way.
    engine["distinct_states"] += 1
    deeper = vs.Figures("ok", TLC_DISTINCT, TLC_GENERATED, TLC_DEPTH + 1)
    assert vs.disagreement(deeper, vs.engine_figures(json.dumps(engine)), workers=2) is None
    assert vs.disagreement(deeper, vs.engine_figures(json.dumps(engine)), workers=1) == (
        f"TLC: {TLC_DISTINCT:,} distinct, {TLC_GENERATED:,} generated, depth {TLC_DEPTH + 1}; engine: "
        f"{TLC_DISTINCT:,} distinct, {TLC_GENERATED:,} generated, depth {TLC_DEPTH}")
    shallower = vs.Figures("ok", TLC_DISTINCT, TLC_GENERATED, TLC_DEPTH - 1)
    assert vs.disagreement(shallower, vs.engine_figures(json.dumps(engine)), workers=2) is not None
    engine.update(result="invariant_violated", violated_invariant="TypeOK")
    assert vs.disagreement(done, vs.engine_figures(json.dumps(engine))) == \
        "TLC found ok, the engine invariant_violated:TypeOK"


def test_versus_tlc_swaps_which_runs_first_each_pair():
    vs = load_pipeline("versus_tlc")
    assert vs.pair_orders(3) == [("tlc", "engine"), ("engine", "tlc"), ("tlc", "engine")]
    assert vs.pair_orders(2, "engine") == [("engine", "tlc"), ("tlc", "engine")]


def test_versus_tlc_counts_the_cpu_of_a_child_left_running():
    """A process that starts a child and exits before it (PySpark leaves its JVM so): the wall time
    ends with the process, the CPU seconds include the child's, followed until it ends."""
    import sys
    vs = load_pipeline("versus_tlc")
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.8: pass\n"
    parent = f"import subprocess, sys, time\nsubprocess.Popen([sys.executable, '-c', {burn!r}])\ntime.sleep(0.5)\n"
    got = vs.timed([sys.executable, "-c", parent], ROOT)
    assert got.returncode == 0 and got.wall_s < 0.5 + 0.8
    assert got.cpu_s >= 0.8 - 0.2  # (the child's last sample may be up to 0.1 s before it ended)


def test_versus_tlc_refuses_what_it_cannot_run(tmp_path, capsys):
    """Each missing piece is named before anything runs: TLC's jar, the spec's module in the spec
    folder, a configuration file for constants set on the case, a model that does not exist."""
    vs = load_pipeline("versus_tlc")
    jar, specs = tmp_path / "tla2tools.jar", tmp_path / "specs"

    def refused(*argv: str) -> str:
        with pytest.raises(SystemExit) as exc:
            vs.main([*argv, "--no-record"])
        assert exc.value.code == 2
        return capsys.readouterr().err.strip().splitlines()[-1]
    assert refused("ledger_chaining", "--tlc", str(jar), "--spec-dir", str(specs)).endswith(
        f"--tlc {jar}: not a file (TLC's tla2tools.jar, or $SSE_TLC_JAR)")
    jar.write_bytes(b"")
    assert refused("ledger_chaining", "--tlc", str(jar), "--spec-dir", str(specs)).endswith(
        f"--spec-dir {specs}: not a folder (the spec's modules, or $SSE_TLC_SPECS)")
    specs.mkdir()
    assert refused("ledger_chaining", "--tlc", str(jar), "--spec-dir", str(specs)).endswith(
        f"--spec-dir {specs}: no LedgerChaining.tla (the module {ROOT / 'schemas' / 'ledger_chaining.yml'} names)")
    (specs / "LedgerChaining.tla").write_text("---- MODULE LedgerChaining ----\n====\n")
    assert refused("ledger_chaining+LedgerLimit=3", "--tlc", str(jar), "--spec-dir", str(specs)).endswith(
        "ledger_chaining+LedgerLimit=3: constants set on the case need a --cfg of their own for TLC")
    assert refused("ledger_chaining", "--tlc", str(jar), "--spec-dir", str(specs), "--cfg",
                   str(tmp_path / "x.cfg")).endswith(f"--cfg {tmp_path / 'x.cfg'}: not a file")
    assert "no_such_model" in refused("no_such_model", "--tlc", str(jar), "--spec-dir", str(specs))


def test_startup_steps_times_each_step_before_the_search(spark, capsys):
    """pipelines/startup_steps.py times the session, the constants, the model's compilation and the
    union's query (here in the suite's session, warm), and prints the parse cache's figures, this
    JVM's so far: run again, every text is read back and none parsed. An unknown model is refused
    before Spark is asked for anything."""
    import re
    from engine.runtime.session import parse_cache_counts
    steps = load_pipeline("startup_steps")
    models = str(ROOT / "tests" / "models")
    lines = []
    for _ in range(2):
        assert steps.main(["counter", "--models", models]) == 0
        out = capsys.readouterr().out
        names = re.findall(r"^(get_spark|declare_constants|compile_model|the union's spark.sql) +[\d.]+ s$", out, re.M)
        assert names == ["get_spark", "declare_constants", "compile_model", "the union's spark.sql"]
        lines.append(re.search(r"^parse cache +(.*)$", out, re.M).group(1))
    if parse_cache_counts(spark) is None:  # no engine jar, or SSE_PARSE_CACHE=off
        assert lines == ["off", "off"]
    else:
        form = r"hits (\d+), parsed (\d+), written \d+, unreadable 0, unserializable 0"
        (h1, p1), (h2, p2) = (map(int, re.fullmatch(form, line).groups()) for line in lines)
        assert h2 > h1 and p2 == p1
    assert steps.main(["no_such_model", "--models", models]) == 2
    assert "startup_steps: " in capsys.readouterr().err
