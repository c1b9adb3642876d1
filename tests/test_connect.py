"""The engine through Spark Connect (how Databricks serverless and standard clusters run PySpark): a Spark
Connect server on loopback, started from what the pyspark package ships, and the engine's command
line as its client (``--remote``): the portable path, TLC's figures and counterexamples, a client
killed mid-level and resumed, and the platform commands on such a run. Bad addresses are refused."""
import json
import os
import signal
import subprocess
import time

import pytest
from deltalake import DeltaTable

from conftest import ENGINE, ROOT, TEST_MODELS, engine_env, run_engine as run, wait_for_line
from platform_util import OK_ARGS


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from engine.runtime.cluster import LocalConnectServer
    try:
        LocalConnectServer.launcher()  # (PySpark 4.0's wheel: no start script, the daemon script and jar)
    except RuntimeError as exc:
        pytest.skip(str(exc))
    with LocalConnectServer(folder=tmp_path_factory.mktemp("connect")) as srv:
        yield srv


def check(server, wh, *argv):
    done = run("check", *argv, "--remote", server.url, "--warehouse", wh, "--json", "--quiet")
    assert done.stdout.strip(), done.stderr[-3000:]
    return done.returncode, json.loads(done.stdout), done.stderr


def test_an_address_where_nothing_listens_is_refused_at_once(tmp_path):
    from engine.runtime.cluster import _free_port
    port = _free_port()
    t0 = time.time()
    done = run("--models", TEST_MODELS, "check", "counter", "--remote", f"sc://127.0.0.1:{port}",
               "--warehouse", tmp_path / "wh")
    assert done.returncode == 2 and time.time() - t0 < 20
    assert done.stderr.strip().splitlines()[-1] == (
        f"error: --remote sc://127.0.0.1:{port}: nothing listens at 127.0.0.1:{port} (Connection refused); "
        "start a Spark Connect server there (sbin/start-connect-server.sh) or name another")
    done = run("--models", TEST_MODELS, "check", "counter", "--remote", f"sc://127.0.0.1:{port}", "--master", "local[1]")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (
        f"error: --remote sc://127.0.0.1:{port} and --master local[1] name two Sparks: a Spark Connect server runs "
        "with its own master; give one of them")
    done = run("--models", TEST_MODELS, "check", "counter", "--remote", "http://example:1")
    assert done.returncode == 2 and "a Spark Connect address is sc://HOST:PORT" in done.stderr


def test_the_counter_and_the_platform_commands_through_connect(server, tmp_path):
    from test_counter import bfs
    wh = tmp_path / "wh"
    code, res, err = _check_models(server, wh, "counter", *OK_ARGS)
    want = bfs({1, 2}, 5, deadlock=False)
    assert code == 0, err[-3000:]
    assert (res["path"], res["distinct_states"], res["states_generated"], res["depth"]) == \
        ("portable", want["distinct"], want["generated"], want["depth"])
    assert "JSON text" in res["fingerprint"]
    # audit, sql and report on the run made through Spark Connect
    audit = run("--models", TEST_MODELS, "audit", res["run_id"], "--warehouse", wh, "--remote", server.url, "--json")
    assert audit.returncode == 0, audit.stderr[-3000:]
    assert json.loads(audit.stdout)["success"] is True
    sql = run("--models", TEST_MODELS, "sql", res["run_id"], "SELECT _depth, count(*) AS n FROM states GROUP BY _depth "
              "ORDER BY _depth", "--warehouse", wh, "--remote", server.url, "--json")
    assert sql.returncode == 0, sql.stderr[-3000:]
    levels = DeltaTable(res["tables"]["levels"]).to_pyarrow_table().to_pylist()
    assert [r["n"] for r in json.loads(sql.stdout)["rows"]] == \
        [r["new_states"] for r in sorted(levels, key=lambda r: r["depth"]) if r["new_states"]]
    report = run("--models", TEST_MODELS, "report", res["run_id"], "--warehouse", wh)
    assert report.returncode == 0 and report.stdout.strip().endswith("report.html"), report.stderr[-3000:]
    # (A violation's shortest counterexample through Spark Connect: test_pulsar_leak_through_connect.)


def _check_models(server, wh, model, *argv):
    done = run("--models", TEST_MODELS, "check", model, *argv, "--remote", server.url, "--warehouse", wh,
               "--json", "--quiet")
    assert done.stdout.strip(), done.stderr[-3000:]
    return done.returncode, json.loads(done.stdout), done.stderr


@pytest.mark.long
def test_pulsar_leak_through_connect(server, tmp_path):
    from test_pulsar_compaction import oracle_actions
    code, res, err = check(server, tmp_path / "wh", "pulsar_compaction", "--invariant", "TypeSafe",
                           "--invariant", "CompactedLedgerLeak")
    assert code == 12, err[-3000:]
    assert res["violated_invariant"] == "CompactedLedgerLeak" and len(res["trace"]) == 12
    assert [s["action"] for s in res["trace"]] == oracle_actions("pc_c_CompactedLedgerLeak")


@pytest.mark.long
def test_pulsar_pc_c2_through_connect(server, tmp_path):
    code, res, err = check(server, tmp_path / "wh", "pulsar_compaction", "--config", "pc_c2")
    assert code == 0, err[-3000:]
    assert (res["distinct_states"], res["states_generated"], res["depth"]) == (45_198, 60_507, 20)


@pytest.mark.long
def test_ledger_chaining_through_connect_killed_and_resumed(server, tmp_path):
    """Ledger chaining's default configuration: the client killed with SIGKILL in the middle of a
    level, then the same command again resumes to TLC's figures, each state once in the states table."""
    from test_ledger_chaining import TLC_DEPTH, TLC_DISTINCT, TLC_GENERATED
    wh = tmp_path / "wh"
    proc = subprocess.Popen([*ENGINE, "check", "ledger_chaining", "--remote", server.url, "--warehouse", str(wh),
                             "--json"], cwd=ROOT, env=engine_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        for line in proc.stderr:
            if line.startswith("Progress(20)"):
                time.sleep(3)  # into depth 21's jobs
                break
        assert proc.poll() is None, "the run ended before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    code, res, err = check(server, wh, "ledger_chaining")
    assert code == 0, err[-3000:]
    assert res["resumed_from_depth"] >= 20
    assert (res["distinct_states"], res["states_generated"], res["depth"]) == (TLC_DISTINCT, TLC_GENERATED, TLC_DEPTH)
    states = DeltaTable(res["tables"]["states"]).to_pyarrow_table(columns=["_fp", "_fp2"])
    assert states.num_rows == TLC_DISTINCT
    assert states.group_by(["_fp", "_fp2"]).aggregate([]).num_rows == TLC_DISTINCT


@pytest.mark.long
def test_a_server_restarted_under_a_run_stops_it_with_exit_3_and_the_run_resumes(tmp_path):
    """A Spark Connect server killed under a running check and started again at the same address
    within ``connect_wait``: the new server has no session of the command's, so the command stops with
    exit 3 and one line that says so, without computing the level again; the same command against
    the new server resumes to the independent search's figures."""
    from engine.runtime.cluster import LocalConnectServer
    from test_counter import bfs
    args = ["--models", TEST_MODELS, "check", "counter", "--config", "no_deadlock", "--set", "Steps=1", "--set",
            "Max=40", "--set", "Cap=99", "--warehouse", tmp_path / "wh", "--json"]
    again = LocalConnectServer(folder=tmp_path / "again")  # (started at the first's port once it is killed)
    try:
        with LocalConnectServer(folder=tmp_path / "first") as first:
            again.port, again.url = first.port, first.url
            code, out, err, _ = _server_killed_under(first, "Progress(2)",
                                                     ["--setting", "connect_wait=120", *args, "--remote", first.url],
                                                     then=again.start, timeout=300)
        assert code == 3 and out == "", err[-3000:]
        last = err.rstrip().splitlines()[-1]
        assert last.startswith("error: Spark stopped under the command (the Spark Connect server lost this command's "
                               "session, as a server restarted under it does: "), last
        assert "Traceback" not in err and "computing it again" not in err, err[-3000:]
        done = run(*args, "--remote", again.url, "--quiet")
    finally:
        again.stop()
    assert done.returncode == 0, done.stderr[-3000:]
    res, want = json.loads(done.stdout), bfs({1}, 40, cap=99, deadlock=False)
    assert res["resumed_from_depth"] >= 2
    assert (res["distinct_states"], res["states_generated"], res["depth"]) == \
        (want["distinct"], want["generated"], want["depth"])


def test_a_server_lost_mid_run_stops_the_command_with_exit_3(server, tmp_path):
    """The Spark Connect server killed under a running check: the client retries for ``connect_wait``
    seconds (PySpark's own policy waits at least 10 minutes, silently), then the command stops with
    exit 3 and one line in gRPC's words, without computing the level again. Last in this module: it
    kills the module's server."""
    argv = ["--setting", "connect_wait=5", "--models", TEST_MODELS, "check", "counter", "--config", "no_deadlock",
            "--set", "Steps=1", "--set", "Max=40", "--set", "Cap=99", "--remote", server.url,
            "--warehouse", tmp_path / "wh", "--json"]
    code, out, err, killed = _server_killed_under(server, "Progress(1)", argv)
    assert code == 3 and out == "", err[-3000:]
    assert time.time() - killed < 40
    last = err.rstrip().splitlines()[-1]
    assert last.startswith("error: Spark stopped under the command (the Spark Connect server is unreachable: "), last
    assert f"127.0.0.1:{server.port}" in last and "Connection refused" in last, last
    assert last.endswith("); a check run again resumes from its last committed level"), last
    assert "Traceback" not in err and "computing it again" not in err, err[-3000:]
    assert err.count(f"engine: the Spark Connect server at {server.url} does not answer; retrying for up to 5 s "
                     "(setting connect_wait)\n") == 1, err[-3000:]


def _server_killed_under(srv, line, argv, then=None, timeout=120):
    """The engine run with ``argv``, the Connect server ``srv`` killed with SIGKILL once the run's
    stderr has ``line``, then ``then()``: the run's (exit status, stdout, stderr, time of the kill)."""
    proc = subprocess.Popen([str(a) for a in [*ENGINE, *argv]], cwd=ROOT, env=engine_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        wait_for_line(proc, line)
        for pid in srv.pids():
            os.kill(pid, signal.SIGKILL)
        killed = time.time()
        if then is not None:
            then()
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, out, err, killed
