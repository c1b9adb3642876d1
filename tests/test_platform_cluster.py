"""A real distributed run: a Spark standalone cluster on loopback (a master and two workers, each
its own JVM), the engine's driver in its own process with --master spark://..., and the same
figures as the local run. The cluster is stopped whatever happens. Long: a master, two workers and
their executors each start a JVM; in the default suite the engine drives a Spark of another process
through Spark Connect (tests/test_connect.py)."""
import json
import subprocess
import sys

import pytest

from conftest import TEST_MODELS, short_run_env
from platform_util import OK_ARGS


@pytest.mark.long
def test_cluster_run_has_the_local_figures(counter_ok, tmp_path):
    from engine.runtime.cluster import LocalCluster
    _, local = counter_ok
    wh = tmp_path / "wh"  # the executors write here: on one machine, the same absolute path
    cluster = LocalCluster(workers=2, log_dir=tmp_path / "cluster")
    try:
        with cluster:
            env = short_run_env(SPARK_LOCAL_IP="127.0.0.1")
            run = subprocess.run(
                [sys.executable, "-m", "engine", "--models", str(TEST_MODELS), "check", "counter", *OK_ARGS,
                 "--warehouse", str(wh), "--json", "--quiet", "--master", cluster.master_url],
                capture_output=True, text=True, env=env, timeout=900)
    finally:
        assert all(p.poll() is not None for p in cluster.procs) and not cluster.procs
    assert run.returncode == 0, run.stderr[-3000:]
    res = json.loads(run.stdout)
    keys = ("result", "distinct_states", "states_generated", "depth", "run_id")
    assert {k: res[k] for k in keys} == {k: local[k] for k in keys}
    # Each worker launched an executor for the engine's application: the work really was distributed.
    for i in range(2):
        apps = list((tmp_path / "cluster" / f"worker-{i}-work").glob("app-*"))
        assert apps, f"worker {i} ran no executor"
    assert "Registering app state-space-engine" in (tmp_path / "cluster" / "master.log").read_text()
