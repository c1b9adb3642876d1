"""Helpers shared by the data-platform tests: run the command line in this process, capture its output."""
import contextlib
import io
import json
import os
import shutil

from pathlib import Path

from conftest import TEST_MODELS


def cli(*argv):
    """``python -m engine ARGV`` in this process (sharing the Spark session): (exit code, stdout, stderr)."""
    from engine.cli.main import main
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


OK_ARGS = ("--config", "no_deadlock", "--set", "Steps=1,2", "--set", "Max=5")
