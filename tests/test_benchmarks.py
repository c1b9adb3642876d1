"""The benchmark scripts (benchmarks/): the benchmark's helpers and a case end to end, and how
versus_tlc reads TLC's output and refuses what it cannot run."""
import json
import os

import pytest
from deltalake import DeltaTable

from conftest import FIXTURES, ROOT, load_script, short_run_env

bench = load_script("benchmarks", "benchmark")


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


@pytest.mark.long
def test_the_benchmark_runs_a_case_on_the_cpus_it_is_given(tmp_path):
    """A case end to end on one CPU: the counter's figures from the tests' own breadth-first search,
    and the JVM the benchmark started sees one processor."""
    import re
    import subprocess
    import sys
    from conftest import TEST_MODELS
    from test_counter import bfs
    want = bfs({1, 2}, 5, deadlock=False)
    script = str(ROOT / "benchmarks" / "benchmark.py")
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


def test_versus_tlc_reads_tlcs_figures_and_its_findings():
    """TLC's own output: the figures of a completed run (``fixtures/tlc/lc_c3_lim4.txt``, as TLC
    printed it for the oracle's configuration), an invariant from its counterexample (the oracle's
    ``bk_v413.txt``), and output with no result, refused with its last lines."""
    from test_ledger_chaining import TLC_DEPTH, TLC_DISTINCT, TLC_GENERATED
    vs = load_script("benchmarks", "versus_tlc")
    done = vs.tlc_figures((FIXTURES / "tlc" / "lc_c3_lim4.txt").read_text())
    assert (done.result, done.distinct, done.generated, done.depth) == ("ok", TLC_DISTINCT, TLC_GENERATED, TLC_DEPTH)
    found = vs.tlc_figures((FIXTURES / "tlc" / "bk_v413.txt").read_text())
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
    vs = load_script("benchmarks", "versus_tlc")
    assert vs.pair_orders(3) == [("tlc", "engine"), ("engine", "tlc"), ("tlc", "engine")]
    assert vs.pair_orders(2, "engine") == [("engine", "tlc"), ("tlc", "engine")]


def test_versus_tlc_counts_the_cpu_of_a_child_left_running():
    """A process that starts a child and exits before it (PySpark leaves its JVM so): the wall time
    ends with the process, the CPU seconds include the child's, followed until it ends."""
    import sys
    vs = load_script("benchmarks", "versus_tlc")
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.8: pass\n"
    parent = f"import subprocess, sys, time\nsubprocess.Popen([sys.executable, '-c', {burn!r}])\ntime.sleep(0.5)\n"
    got = vs.timed([sys.executable, "-c", parent], ROOT)
    assert got.returncode == 0 and got.wall_s < 0.5 + 0.8
    assert got.cpu_s >= 0.8 - 0.2  # (the child's last sample may be up to 0.1 s before it ended)


def test_versus_tlc_refuses_what_it_cannot_run(tmp_path, capsys):
    """Each missing piece is named before anything runs: TLC's jar, the spec's module in the spec
    folder, a configuration file for constants set on the case, a model that does not exist."""
    vs = load_script("benchmarks", "versus_tlc")
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



def test_progress_curves_read_both_checkers_progress_lines():
    """The curves are read from what each checker prints: TLC's minute line (as in its output for
    the oracle's ledger chaining run) and its final count, and the engine's level line as the
    engine's own progress printer writes it. A line of neither kind is no point."""
    import io
    from engine.cli.output import Progress
    from engine.store.runs import LevelFigures
    pc = load_script("benchmarks", "progress_curves")
    tlc = (FIXTURES / "tlc" / "lc_c3_lim4.txt").read_text().splitlines()
    minute = next(line for line in tlc if line.startswith("Progress("))
    assert pc.parse_line("tlc", minute) == (17, 39_250, 141_044, 13_625)
    final = next(line for line in tlc if line[:1].isdigit() and line.endswith("states left on queue."))
    assert pc.parse_line("tlc", final)[1:] == (375_963, 2_207_914, 0)
    out = io.StringIO()
    Progress(out)(LevelFigures(19, 182_984, 53_368, 0, 213_047, 691_207, 10.46), 53_368)
    assert pc.parse_line("engine", out.getvalue().strip()) == (19, 213_047, 691_207, 53_368)
    assert pc.parse_line("engine", minute) is None and pc.parse_line("tlc", out.getvalue()) is None
    points = [pc.Point(4.0, 8, 10, 20, 5), pc.Point(64.0, 13, 100, 300, 50)]
    assert pc.sample(points, 3.9) is None and pc.sample(points, 60).distinct == 10
    assert pc.sample(points, 64.0).distinct == 100


def test_progress_curves_refuse_what_they_cannot_run(tmp_path, capsys):
    pc = load_script("benchmarks", "progress_curves")

    def refused(*argv: str) -> str:
        with pytest.raises(SystemExit) as exc:
            pc.main(list(argv))
        assert exc.value.code == 2
        return capsys.readouterr().err.strip().splitlines()[-1]
    jar = tmp_path / "tla2tools.jar"
    assert refused("bookkeeper:tlc_perf_4b", "--seconds", "0").endswith("--seconds 0 and --every 60: both above 0")
    assert refused("bookkeeper:tlc_perf_4b", "--tlc", f"{jar}").endswith(f"--tlc {jar}: {jar} is not a file")
    jar.write_bytes(b"")
    assert refused("bookkeeper:tlc_perf_4b", "--tlc", f"{jar}", "--spec-dir", str(tmp_path)).endswith(
        f"--spec-dir {tmp_path}: no BookKeeperProtocol.tla (the module {ROOT / 'schemas' / 'bookkeeper.yml'} names)")
    (tmp_path / "BookKeeperProtocol.tla").write_text("")
    assert refused("bookkeeper:bk_2b_wq1", "--tlc", f"{jar}", "--spec-dir", str(tmp_path)).endswith(
        f"--cfg {ROOT / 'benchmarks' / 'tlc_cfg' / 'bk_2b_wq1.cfg'}: not a file")


@pytest.mark.long
def test_the_canonicalization_cost_is_measured_over_the_runs_stored_states(spark, tmp_path):
    """For a case with symmetry the benchmark times the canonical fingerprint (in SQL and with the
    JVM helper) and the plain one over every state the run stored (the test model ``tokens``: its orbits, as the search found them)."""
    from conftest import TEST_MODELS
    from engine.model.loader import load_model, resolve_run
    from engine.search.loop import check
    from engine.settings import Settings
    spec = resolve_run(load_model("tokens", TEST_MODELS), None, [], None, None)
    assert spec.symmetry
    out = check(spec, tmp_path, settings=Settings(), spark=spark)
    cost = bench.canonical_cost(spark, spec, tmp_path / spec.model.name / spec.run_id, Settings())
    assert cost["canon_states"] == out.distinct_states > 1
    assert cost["canonical_fp_us"] > 0 and cost["plain_fp_us"] > 0
    assert cost["canonical_jvm_fp_us"] > 0  # (the JVM helper is loaded in the tests' session)


canonical = load_script("benchmarks", "canonical")


@pytest.mark.long
def test_canonical_benchmark_checks_a_runs_stored_fingerprints(spark, tmp_path, capsys):
    """benchmarks/canonical.py recomputes a symmetric run's canonical fingerprints (the JVM helper's and
    the SQL's) over a stored level and counts those that differ from the stored ones: none for the
    run as written, one where a stored fingerprint was changed; it prints each way's cost a state."""
    import glob
    import pyarrow as pa
    import pyarrow.parquet as pq
    from conftest import TEST_MODELS
    from engine.model.loader import load_model, resolve_run
    from engine.search.loop import check as run
    spec = resolve_run(load_model("tokens", TEST_MODELS), None, ["Procs=p1,p2,p3", "Max=1", "LogLen=2"], None, None)
    out = run(spec, tmp_path / "wh", spark=spark)
    folder = os.path.dirname(out.tables["states"])
    capsys.readouterr()
    args = [folder, "--rounds", "1", "--check", "--models", str(TEST_MODELS)]
    assert canonical.main(args, spark=spark) == 0
    printed = capsys.readouterr().out
    n = int(printed.splitlines()[0].split(", ")[1].split()[0].replace(",", ""))
    assert n > 1
    assert f"check helper: 0 of {n:,} states'" in printed and f"check sql: 0 of {n:,} states'" in printed
    assert all(f"{kind:7s} round 0: wall" in printed for kind in ("plain", "helper", "sql"))
    level = printed.splitlines()[0].split(": ")[1].split(",")[0]
    files = sorted(glob.glob(os.path.join(out.tables["states"], level, "*.parquet")))
    table = pq.read_table(files[0])
    fps = table["_fp"].to_pylist()
    fps[0] ^= 1
    pq.write_table(table.set_column(table.schema.get_field_index("_fp"), "_fp", pa.array(fps, pa.int64())), files[0])
    assert canonical.main([*args[:1], "--depth", str(int(level.split("-")[1])), *args[1:]], spark=spark) == 0
    printed = capsys.readouterr().out
    assert f"check helper: 1 of {n:,} states'" in printed and f"check sql: 1 of {n:,} states'" in printed


def test_canonical_benchmark_names_what_it_cannot_read(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        canonical.main([str(tmp_path)])
    assert e.value.code == 2
    assert f"{tmp_path / 'run.json'}: no such file" in capsys.readouterr().err
    (tmp_path / "run.json").write_text(json.dumps({"symmetry": False}))
    with pytest.raises(SystemExit):
        canonical.main([str(tmp_path)])
    assert "the run has no symmetry" in capsys.readouterr().err
