"""The engine server (python -m engine serve): commands handed to one long-lived Spark driver give the
same figures, traces, errors and exit statuses as run in their own process; a client that goes away
has its run cancelled, and the run resumes; a client whose settings differ runs the command itself."""
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from conftest import ROOT, TEST_MODELS
from platform_util import cli
from test_counter import bfs
from test_ledger_chaining import TLC_DEPTH, TLC_DISTINCT, TLC_GENERATED

ENGINE = [sys.executable, "-m", "engine"]
WARM = "counter:no_deadlock+Max=4"  # checked once as the server starts (serve --warm)
BAD_CONSTANT = "error: model counter has no constant 'Nope' (constants: Steps, Max, Limit, Cap)"


class Server:
    def __init__(self, sock, warm=True):
        self.sock = sock
        self.env = {**os.environ, "SSE_SERVER": str(sock)}
        self.proc = subprocess.Popen([*ENGINE, "--models", str(TEST_MODELS), "serve", *(["--warm", WARM] if warm else [])],
                                     cwd=ROOT, env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: [self.lines.put(line) for line in self.proc.stderr], daemon=True).start()
        self.wait_for("engine server: listening at", 180)
        if warm:
            assert f"warmed up with {WARM} -> exit 0 after " in self.wait_for("engine server: warmed up", 180)

    def wait_for(self, text, timeout=120.0):
        end = time.time() + timeout
        while time.time() < end:
            try:
                line = self.lines.get(timeout=max(0.1, end - time.time()))
            except queue.Empty:
                break
            if line.startswith(text):
                return line
        raise AssertionError(f"the server did not print {text!r} within {timeout} s (alive: {self.proc.poll() is None})")

    def run(self, *argv, env=None, **kw):
        return subprocess.run([*ENGINE, *[str(a) for a in argv]], cwd=ROOT, env=env or self.env, capture_output=True,
                              text=True, timeout=600, **kw)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    sock = tmp_path_factory.mktemp("srv") / "s.sock"
    srv = Server(sock)
    yield srv
    if srv.proc.poll() is None:
        srv.proc.kill()
        srv.proc.wait()


def test_check_on_the_server_gives_the_figures_and_trace_of_a_check_run_here(server, tmp_path):
    ok = server.run("--models", TEST_MODELS, "check", "counter", "--warehouse", tmp_path / "a", "--json",
                    "--config", "no_deadlock", "--set", "Steps=1,2", "--set", "Max=6")
    assert ok.returncode == 0, ok.stderr[-3000:]
    assert " -> exit 0 after " in server.wait_for("engine server: --models")
    res = json.loads(ok.stdout)
    want = bfs({1, 2}, 6, deadlock=False)
    assert (res["result"], res["distinct_states"], res["states_generated"], res["depth"]) == \
        ("ok", want["distinct"], want["generated"], want["depth"])

    bad = ["--models", TEST_MODELS, "check", "counter", "--json", "--no-deadlock", "--set", "Steps=1,2",
           "--set", "Max=8", "--set", "Limit=5"]
    served = server.run(*bad, "--warehouse", tmp_path / "b")
    code, out, _ = cli(*bad, "--warehouse", tmp_path / "c", "--no-server")  # in this process
    assert served.returncode == code == 12, served.stderr[-3000:]
    here, there = json.loads(out), json.loads(served.stdout)
    assert there["violated_invariant"] == here["violated_invariant"] == "Bounded"
    assert len(there["trace"]) == len(here["trace"]) == bfs({1, 2}, 8, limit=5, deadlock=False)["trace_length"]
    assert [s["state"] for s in there["trace"]] == [s["state"] for s in here["trace"]]
    assert " -> exit 12 after " in server.wait_for("engine server: --models")

    status = server.run("serve", "--status")
    assert status.returncode == 0
    assert f"pid {server.proc.pid}, Spark local[2]" in status.stdout and "2 commands served" in status.stdout


def test_bad_input_gets_the_same_error_and_status_on_the_server(server):
    argv = ["--models", TEST_MODELS, "check", "counter", "--set", "Nope=3"]
    served = server.run(*argv)
    here = server.run(*argv, "--no-server")
    assert served.returncode == here.returncode == 2
    assert served.stderr.strip() == here.stderr.strip() == BAD_CONSTANT
    assert " -> exit 2 after " in server.wait_for("engine server: --models")


def test_a_command_with_other_settings_or_master_runs_in_its_own_process(server, tmp_path):
    argv = ["--models", TEST_MODELS, "check", "counter", "--set", "Nope=3"]
    other = server.run(*argv, env={**server.env, "SSE_SHUFFLE_PARTITIONS": "5"})
    assert other.returncode == 2
    assert other.stderr.splitlines() == [
        f"engine: not using the server at {server.sock} (pid {server.proc.pid}): its SSE_* settings differ from "
        "this shell's (SSE_SHUFFLE_PARTITIONS)", BAD_CONSTANT]
    copy = tmp_path / "copy"  # the same engine code in another place: another checkout's models
    shutil.copytree(ROOT / "engine", copy / "engine", ignore=shutil.ignore_patterns("__pycache__"))
    elsewhere = subprocess.run([*ENGINE, *argv], cwd=copy, env=server.env, capture_output=True, text=True, timeout=120)
    assert elsewhere.returncode == 2
    assert elsewhere.stderr.splitlines() == [
        f"engine: not using the server at {server.sock} (pid {server.proc.pid}): it runs the engine at "
        f"{ROOT / 'engine'} (its models and warehouse), this command's is at {copy / 'engine'}", BAD_CONSTANT]
    master = server.run(*argv, "--master", "local[1]")
    assert master.returncode == 2
    assert master.stderr.splitlines()[0] == (f"engine: not using the server at {server.sock} (pid {server.proc.pid}): "
                                             "it runs Spark master local[2], this command asks for local[1]")


def test_a_socket_nobody_listens_on_is_passed_over(tmp_path):
    dead = tmp_path / "dead.sock"
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(dead))
    s.close()  # the file stays, as after a server killed with -9
    done = subprocess.run([*ENGINE, "--models", str(TEST_MODELS), "check", "counter", "--set", "Nope=3"], cwd=ROOT,
                          env={**os.environ, "SSE_SERVER": str(dead)}, capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr.strip()) == (2, BAD_CONSTANT)
    again = subprocess.run([*ENGINE, "serve", "--status"], cwd=ROOT, env={**os.environ, "SSE_SERVER": str(dead)},
                           capture_output=True, text=True, timeout=120)
    assert (again.returncode, again.stderr.strip()) == (2, f"error: no engine server listens at {dead}")


def test_an_interrupted_client_cancels_its_run_which_resumes_to_tlcs_figures(server, tmp_path):
    """A quiet run prints nothing until it ends: its client's going away still stops it (at the next
    level, its jobs cancelled), and the run resumes from the last committed level."""
    wh = tmp_path / "wh"
    proc = subprocess.Popen([*ENGINE, "check", "ledger_chaining", "--warehouse", str(wh), "--quiet"], cwd=ROOT,
                            env=server.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    end = time.time() + 300
    while len(list(wh.glob("ledger_chaining/*/states/_delta_log/*.json"))) < 13 and time.time() < end:
        assert proc.poll() is None, "the run ended before it could be interrupted"
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)  # 12 levels committed
    assert proc.wait(timeout=60) == 130
    assert "interrupted; the run resumes from its last committed level when started again" in proc.stderr.read()
    assert "client gone, jobs cancelled" in server.wait_for("engine server: check ledger_chaining")

    done = server.run("check", "ledger_chaining", "--warehouse", wh, "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    res = json.loads(done.stdout)
    assert 12 <= res["resumed_from_depth"] < TLC_DEPTH  # stopped early, not run to its end
    assert (res["result"], res["distinct_states"], res["states_generated"], res["depth"]) == \
        ("ok", TLC_DISTINCT, TLC_GENERATED, TLC_DEPTH)


def test_a_second_server_is_refused_and_stop_ends_the_first(server):
    second = server.run("serve")
    assert second.returncode == 2
    assert second.stderr.strip().endswith(f"error: an engine server already listens at {server.sock} "
                                          "(stop it: python -m engine serve --stop)")
    stop = server.run("serve", "--stop")
    assert (stop.returncode, stop.stdout.strip()) == (0, f"engine server pid {server.proc.pid} stopping")
    assert server.proc.wait(timeout=60) == 0
    assert not server.sock.exists()


def test_a_detached_server_returns_once_it_listens_and_stops_when_idle(tmp_path):
    sock = tmp_path / "d.sock"
    env = {**os.environ, "SSE_SERVER": str(sock)}
    bad = subprocess.run([*ENGINE, "serve", "--detach", "--warm", "nomodel"], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=300)
    assert bad.returncode == 2
    assert bad.stderr.startswith("engine server exited with status 2 before it listened; the end of "
                                 f"{sock}.log:\n"), bad.stderr
    assert "error: --warm nomodel: unknown model 'nomodel'" in bad.stderr

    t0 = time.time()
    up = subprocess.run([*ENGINE, "serve", "--detach", "--idle-stop", "0.1"], cwd=ROOT, env=env, capture_output=True,
                        text=True, timeout=300)
    assert up.returncode == 0, up.stderr
    pid = int(up.stdout.split("pid ")[1].split()[0])
    assert up.stdout.strip() == (f"engine server: pid {pid} listening at {sock} (its output: {sock}.log; "
                                 "stop it with python -m engine serve --stop)")
    status = subprocess.run([*ENGINE, "serve", "--status"], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=60)
    assert f"pid {pid}, Spark local[2]" in status.stdout
    while sock.exists() and time.time() - t0 < 120:  # no command for 6 s: it stops
        time.sleep(0.5)
    assert not sock.exists()
    log = (tmp_path / "d.sock.log").read_text()
    assert "engine server: no command for 6 s, stopping" in log and "engine server: stopped after 0 commands" in log


def test_ctrl_c_on_the_server_stops_it_after_the_command_it_runs(tmp_path):
    srv = Server(tmp_path / "c.sock", warm=False)
    try:
        argv = ["--models", TEST_MODELS, "check", "counter", "--json", "--quiet", "--config", "no_deadlock",
                "--set", "Steps=1", "--set", "Max=30", "--set", "Cap=99", "--warehouse", tmp_path / "wh"]
        client = subprocess.Popen([*ENGINE, *[str(a) for a in argv]], cwd=ROOT, env=srv.env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        end = time.time() + 120
        while "running: --models" not in srv.run("serve", "--status").stdout and time.time() < end:
            assert client.poll() is None, client.communicate()
        srv.proc.send_signal(signal.SIGINT)
        out, err = client.communicate(timeout=300)
        assert client.returncode == 0, err[-3000:]
        res = json.loads(out)
        want = bfs({1}, 30, deadlock=False)
        assert (res["distinct_states"], res["states_generated"], res["depth"]) == \
            (want["distinct"], want["generated"], want["depth"])
        assert srv.proc.wait(timeout=60) == 0
        assert not srv.sock.exists()
        srv.wait_for("engine server: stopping after the command it runs")
        assert srv.wait_for("engine server: stopped after").startswith("engine server: stopped after 1 commands")
    finally:
        if srv.proc.poll() is None:
            srv.proc.kill()


@pytest.mark.long
def test_versus_tlc_hands_the_engines_runs_to_a_server_of_its_own(tmp_path):
    """``benchmarks/versus_tlc.py --server``: the server it starts runs the engine's check (the figures
    of the counter's breadth-first search, one more command served), the command's CPU seconds
    include the server's over it, a command the server would not run is refused with the client's
    reason rather than timed as a cold run, and ``stop`` ends the server."""
    from conftest import load_script
    vs = load_script("benchmarks", "versus_tlc")
    srv = vs.EngineServer(tmp_path, TEST_MODELS)
    try:
        assert srv.served() == 0
        got = vs.run_engine("counter", "no_deadlock", ["Steps=1,2", "Max=6"], TEST_MODELS, srv)
        assert got.returncode == 0, got.stderr[-3000:]
        assert srv.served() == 1
        fig, want = vs.engine_figures(got.stdout), bfs({1, 2}, 6, deadlock=False)
        assert (fig.result, fig.distinct, fig.generated, fig.depth) == \
            ("ok", want["distinct"], want["generated"], want["depth"])
        # The client alone starts Python and waits (0.15 CPU-s); the server's Spark did the check.
        assert got.cpu_s > 1.0, got
        srv.env["SSE_SHUFFLE_PARTITIONS"] = "3"  # a setting the server was not started with
        with pytest.raises(SystemExit, match=r"(?s)the check did not run on the engine server at .*"
                                             r"not using the server .*its SSE_\* settings differ from this "
                                             r"shell's \(SSE_SHUFFLE_PARTITIONS\)"):
            vs.run_engine("counter", "no_deadlock", ["Nope=1"], TEST_MODELS, srv)
        assert srv.served() == 1
    finally:
        srv.stop()
    assert not srv.alive() and srv.served() is None
