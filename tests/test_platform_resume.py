"""Resume and concurrency: one run of the counter is killed at each point where a crash can leave
the tables (between the states commit and the levels row, during a level's expansion, between the
Parquet write and the Delta commit), a second process on the same run is refused while the
first is alive, and the last start finishes with the figures of an uninterrupted run and no state
twice. The kill points are the store's test hooks (SSE_KILL_AT / SSE_HOLD_AT)."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest
from deltalake import DeltaTable

from conftest import TEST_MODELS, short_run_env, wait_for_line
from platform_util import OK_ARGS, cli


def start(wh, **env):
    argv = [sys.executable, "-m", "engine", "--models", str(TEST_MODELS), "check", "counter", *OK_ARGS,
            "--warehouse", str(wh), "--json"]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=short_run_env(**env))


def states(run_root):
    return DeltaTable(str(run_root / "states"))


def committed_depths(run_root):
    return sorted(int(c["depth"]) for c in states(run_root).history() if "depth" in c)


def level_rows(run_root):
    return sorted(DeltaTable(str(run_root / "levels")).to_pyarrow_table()["depth"].to_pylist())


def test_killed_runs_resume_to_the_same_figures(counter_ok, tmp_path):
    _, local = counter_ok
    wh = tmp_path / "wh"
    root = wh / "counter" / local["run_id"]

    # 1. killed after level 3's states commit, before its row in the levels table
    b = start(wh, SSE_KILL_AT="after-commit:3")
    b.communicate(timeout=900)
    assert b.returncode == -signal.SIGKILL
    assert committed_depths(root) == [1, 2, 3] and level_rows(root) == [1, 2]

    # 2. killed while level 5 is being expanded (right after level 4 is reported)
    c = start(wh)
    wait_for_line(c, "Progress(4)")
    c.kill()
    c.communicate(timeout=120)
    assert committed_depths(root) == [1, 2, 3, 4] and level_rows(root) == [1, 2, 3, 4]

    # 3. a run that is alive (held after Spark wrote level 6's Parquet files, before their Delta
    # commit) refuses a second start; then it is killed there
    d = start(wh, SSE_HOLD_AT="before-commit:6")
    try:
        wait_for_line(d, "holding at before-commit:6")
        code, out, err = cli("--models", TEST_MODELS, "check", "counter", *OK_ARGS, "--warehouse", wh, "--json")
        assert code == 2 and out == ""
        assert err.startswith(f"error: run {local['run_id']} is already running in {root} (process ")
        assert err.rstrip().endswith("; wait for it or stop it")
    finally:
        d.kill()
        d.communicate(timeout=120)
    assert committed_depths(root) == [1, 2, 3, 4, 5]
    assert list((root / "states" / "depth-000006").glob("*.parquet"))  # written, not in the table

    # 4. the last start finishes: an uninterrupted run's figures, every state once, and a clean audit
    code, out, err = cli("--models", TEST_MODELS, "check", "counter", *OK_ARGS, "--warehouse", wh, "--json", "--quiet")
    assert code == 0, err
    res = json.loads(out)
    keys = ("result", "distinct_states", "states_generated", "depth", "run_id")
    assert {k: res[k] for k in keys} == {k: local[k] for k in keys}
    assert res["resumed_from_depth"] == 5 and res["from_cache"] is False
    t = states(root).to_pyarrow_table(columns=["_fp", "_fp2"])
    assert t.num_rows == local["distinct_states"]
    assert len(t.group_by(["_fp", "_fp2"]).aggregate([])) == t.num_rows
    assert level_rows(root) == list(range(1, local["depth"] + 1))
    code, out, _ = cli("--models", TEST_MODELS, "audit", local["run_id"], "--warehouse", wh)
    assert code == 0 and "PASS" in out.splitlines()[0], out


def test_a_run_whose_driver_jvm_is_killed_says_so_and_resumes(tmp_path):
    """The driver's JVM killed under a running check (as the kernel's OOM killer would): the command
    exits 3 with one line saying Spark stopped under it, not a traceback; the same command again
    resumes from the last committed level to the figures of an uninterrupted run, each state once."""
    from test_counter import bfs
    wh = tmp_path / "wh"
    args = ("--config", "no_deadlock", "--set", "Steps=1", "--set", "Max=40", "--set", "Cap=99")
    argv = [sys.executable, "-m", "engine", "--models", str(TEST_MODELS), "check", "counter", *args,
            "--warehouse", str(wh), "--json"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=short_run_env())
    try:
        wait_for_line(proc, "Progress(5)")
        os.kill(int(_driver_jvm(proc)), signal.SIGKILL)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 3 and out == "", err[-3000:]
    assert err.rstrip().splitlines()[-1] == (
        "error: Spark stopped under the command (the driver's JVM is gone: ConnectionRefusedError: [Errno 111] "
        "Connection refused); a check run again resumes from its last committed level")
    assert "Traceback" not in err
    code, out, err = cli("--models", TEST_MODELS, "check", "counter", *args, "--warehouse", wh, "--json", "--quiet")
    assert code == 0, err
    res, want = json.loads(out), bfs({1}, 40, deadlock=False)
    assert res["resumed_from_depth"] >= 5
    assert (res["distinct_states"], res["states_generated"], res["depth"]) == \
        (want["distinct"], want["generated"], want["depth"])
    (root,) = wh.glob("counter/*")
    t = states(root).to_pyarrow_table(columns=["_fp", "_fp2"])
    assert t.num_rows == len(t.group_by(["_fp", "_fp2"]).aggregate([])) == want["distinct"]


@pytest.mark.long
def test_ctrl_c_in_a_large_level_stops_the_check_and_it_resumes_to_tlcs_figures(tmp_path):
    """Ctrl-C while a large level's held plan runs (BookKeeper's master model, depth 19 of 28, about
    180,000 successors): PySpark's handler cancels the job, whose error is raised over the
    KeyboardInterrupt as the job's result is fetched; the command still stops (exit 130, the line
    that says so) rather than planning the level again, and its driver's JVM goes with it. Run
    again, it resumes to TLC's figures, each state once."""
    wh = tmp_path / "wh"
    argv = [sys.executable, "-m", "engine", "check", "bookkeeper", "--config", "bk_master_2b_nosym",
            "--warehouse", str(wh), "--json"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=short_run_env())
    try:
        wait_for_line(proc, "Progress(18)")
        jvm = _driver_jvm(proc)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130 and out == "", err[-3000:]
    assert err.rstrip().splitlines()[-1] == \
        "interrupted; the run resumes from its last committed level when started again"
    assert "planning each level" not in err and "computing it again" not in err, err[-3000:]
    assert _gone_within(jvm, 30), f"the driver's JVM {jvm} outlived its command"
    code, out, err = cli("check", "bookkeeper", "--config", "bk_master_2b_nosym", "--warehouse", wh, "--json",
                         "--quiet")
    assert code == 0, err[-3000:]
    res = json.loads(out)
    assert 18 <= res["resumed_from_depth"] < 28
    assert (res["distinct_states"], res["states_generated"], res["depth"]) == (285_773, 982_019, 28)
    (root,) = wh.glob("bookkeeper/*")
    t = states(root).to_pyarrow_table(columns=["_fp", "_fp2"])
    assert t.num_rows == len(t.group_by(["_fp", "_fp2"]).aggregate([])) == 285_773


def _driver_jvm(proc) -> str:
    """The pid of the Spark driver's JVM that the engine's process ``proc`` started."""
    (jvm,) = subprocess.run(["pgrep", "-P", str(proc.pid), "java"], capture_output=True, text=True).stdout.split()
    return jvm


def _gone_within(pid: str, seconds: float) -> bool:
    """Whether process ``pid`` has exited (or is a zombie: no command line) within ``seconds``."""
    end = time.time() + seconds
    while time.time() < end:
        try:
            if not open(f"/proc/{pid}/cmdline").read():
                return True
        except OSError:
            return True
        time.sleep(0.5)
    return False
