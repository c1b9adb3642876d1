"""The portable path on a real cluster, at scale: a Spark standalone cluster on loopback with two
workers (separate JVMs, one core each) checks Kafka KIP-320 configuration C with every level in
Spark, to TLC's figures; then again with one executor killed (SIGKILL) in the middle of a large
level. And a warehouse the executors cannot see is refused before the search starts."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest
from deltalake import DeltaTable

from conftest import ROOT, TEST_MODELS, short_run_env

ENGINE = [sys.executable, "-m", "engine"]
KIP320_C = (737_794, 26)  # TLC: distinct states, depth


def _cluster(tmp_path, **kw):
    from engine.runtime.cluster import LocalCluster
    return LocalCluster(workers=2, cores=1, memory="2g", log_dir=tmp_path / "cluster", **kw)


def _executors() -> list[int]:
    done = subprocess.run(["pgrep", "-f", "CoarseGrainedExecutorBackend"], capture_output=True, text=True)
    return [int(p) for p in done.stdout.split()]


def _check(cluster, wh, *argv, stderr=subprocess.PIPE):
    return subprocess.Popen([*ENGINE, *argv, "--master", cluster.master_url, "--warehouse", str(wh), "--json"],
                            cwd=ROOT, env=short_run_env(SPARK_LOCAL_IP="127.0.0.1"), stdout=subprocess.PIPE,
                            stderr=stderr, text=True)


def _figures(res):
    states = DeltaTable(res["tables"]["states"]).to_pyarrow_table(columns=["_fp", "_fp2"])
    unique = states.group_by(["_fp", "_fp2"]).aggregate([]).num_rows
    return res["distinct_states"], res["depth"], states.num_rows, unique


@pytest.mark.long
def test_kip320_c_on_two_workers_every_level_in_spark(tmp_path):
    with _cluster(tmp_path) as cluster:
        proc = _check(cluster, tmp_path / "wh", "--setting", "level_path=spark", "check", "kafka_kip320",
                      "--config", "C", "--quiet")
        out, err = proc.communicate(timeout=3600)
    assert proc.returncode == 0, err[-3000:]
    res = json.loads(out)
    assert res["path"] == "portable"
    distinct, depth, rows, unique = _figures(res)
    assert (distinct, depth) == KIP320_C and rows == unique == distinct
    for i in range(2):
        assert list((tmp_path / "cluster" / f"worker-{i}-work").glob("app-*")), f"worker {i} ran no executor"


@pytest.mark.long
def test_an_executor_killed_mid_level_costs_the_level_again_not_the_figures(tmp_path):
    """One executor killed with SIGKILL while depth 16's jobs run (its worker starts another): the level
    is computed again from the stored level before it, and the run ends with TLC's figures, each
    state once in the states table."""
    with _cluster(tmp_path) as cluster:
        proc = _check(cluster, tmp_path / "wh", "--setting", "level_path=spark", "check", "kafka_kip320",
                      "--config", "C")
        killed, lines = None, []
        for line in proc.stderr:
            lines.append(line)
            if killed is None and line.startswith("Progress(15)"):
                time.sleep(4)  # into depth 16's jobs
                pids = _executors()
                assert pids, "no executor to kill"
                killed = pids[0]
                os.kill(killed, signal.SIGKILL)
        out = proc.stdout.read()
        proc.wait(timeout=60)
    assert killed is not None
    err = "".join(lines)
    assert proc.returncode == 0, err[-3000:]
    distinct, depth, rows, unique = _figures(json.loads(out))
    assert (distinct, depth) == KIP320_C and rows == unique == distinct


@pytest.mark.long
def test_a_warehouse_the_executors_cannot_see_is_refused_before_the_search(tmp_path):
    private = tmp_path / "private"
    private.mkdir()
    probe = subprocess.run(["unshare", "-m", "sh", "-c", f'mount -t tmpfs none "{private}"'], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"mount namespaces need root here: {probe.stderr.decode().strip()}")
    wh = private / "wh"
    with _cluster(tmp_path, private=private) as cluster:
        proc = _check(cluster, wh, "--models", str(TEST_MODELS), "check", "counter", "--config", "no_deadlock")
        out, err = proc.communicate(timeout=900)
    assert proc.returncode == 2, err[-3000:]
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"error: warehouse {wh}: Spark's executors cannot read what this process writes there")
    assert "a filesystem that the driver, this process and every executor mount" in last
    assert not (wh / "counter").exists()  # nothing of the run written
