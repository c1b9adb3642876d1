"""Helpers shared by the data-platform tests: run the command line in this process, capture its output."""
import contextlib
import io
import json
import os
import shutil

import pytest
from pathlib import Path

from conftest import TEST_MODELS


def cli(*argv):
    """``python -m engine ARGV`` in this process (sharing the Spark session): (exit code, stdout, stderr)."""
    from engine.cli import main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def counter_run(warehouse: Path, *args):
    """Check the toy counter model; returns the --json result."""
    code, out, err = cli("--models", TEST_MODELS, "check", "counter", "--warehouse", warehouse,
                         "--json", "--quiet", *args)
    assert out.strip(), err
    res = json.loads(out)
    res["_exit"] = code
    return res


def copy_run(res, dest: Path) -> Path:
    """A copy of a finished run's folder (tables and run.json), to corrupt without touching the original."""
    src = Path(res["tables"]["states"]).parent
    shutil.copytree(src, dest)
    return dest


def _warehouse(tmp_path_factory, name):
    # SSE_TEST_KEEP_WAREHOUSE=DIR keeps these runs between pytest sessions while developing: a
    # finished run is then read back from its outcome table (from_cache), with the same figures.
    keep = os.environ.get("SSE_TEST_KEEP_WAREHOUSE")
    return Path(keep) / name if keep else tmp_path_factory.mktemp(name) / "wh"


OK_ARGS = ("--config", "no_deadlock", "--set", "Steps=1,2", "--set", "Max=5")


@pytest.fixture(scope="session")
def counter_ok(tmp_path_factory):
    """One finished run of the counter (20 distinct states, depth 6) that several test files read."""
    wh = _warehouse(tmp_path_factory, "platform")
    res = counter_run(wh, *OK_ARGS)
    assert (res["_exit"], res["distinct_states"], res["states_generated"], res["depth"]) == (0, 20, 20, 6)
    return wh, res


@pytest.fixture(scope="session")
def counter_violation(tmp_path_factory):
    """A counter run that violates Bounded (x <= 3) at depth 4: 0 -> 2 -> 3 -> 5 is not it, TLC's first is."""
    wh = _warehouse(tmp_path_factory, "platform_bad")
    res = counter_run(wh, "--no-deadlock", "--set", "Steps=1,2", "--set", "Max=5", "--set", "Limit=3")
    assert res["_exit"] == 12 and res["violated_invariant"] == "Bounded"
    return wh, res
