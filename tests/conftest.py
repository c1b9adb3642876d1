import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TEST_MODELS = Path(__file__).resolve().parent / "models"
# TLC's outputs the tests compare with (traces, figures, coverage), kept in the repository.
FIXTURES = Path(__file__).resolve().parent / "fixtures"
# The suite's commands run in their own processes, never on an engine server a developer left up
# (tests/test_server.py starts its own).
os.environ["SSE_SERVER"] = "off"


@pytest.fixture(scope="session")
def spark():
    from engine.runtime.session import get_spark
    return get_spark()


@pytest.fixture
def model_copy(tmp_path):
    """A writable copy of the project's models (schemas/ and actions_sql/) to alter in a test."""
    root = tmp_path / "models"
    shutil.copytree(ROOT / "schemas", root / "schemas")
    shutil.copytree(ROOT / "actions_sql", root / "actions_sql")
    return root


@pytest.fixture
def test_models_copy(tmp_path):
    """A writable copy of the engine's test models (tests/models) to alter in a test."""
    root = tmp_path / "models"
    shutil.copytree(TEST_MODELS, root)
    return root


# The JVM options of the suite's short commands run in a process of their own (the test counter: a
# few levels of a few states each): C1 alone. Such a run is start-up, and C2 compiling Spark's
# start-up code took a core from it: the counter's check 12.9 to 13.1 s against 15.5 to 17.4 s.
# Nothing a test asserts depends on the JIT. (SSE_JAVA_OPTIONS set around the suite wins.)
SHORT_RUN_JAVA_OPTIONS = "-XX:+UseParallelGC -XX:TieredStopAtLevel=1"


def short_run_env(**extra):
    """The environment for a short command run in a process of its own (SHORT_RUN_JAVA_OPTIONS)."""
    return {"SSE_JAVA_OPTIONS": SHORT_RUN_JAVA_OPTIONS, **os.environ, "PYTHONPATH": str(ROOT), **extra}


def wait_for_line(proc, text, timeout=600):
    """Read the process's stderr until a line contains ``text``; returns the lines read."""
    seen, deadline = [], time.time() + timeout
    while time.time() < deadline:
        line = proc.stderr.readline()
        if not line:
            raise AssertionError(f"process ended (code {proc.wait()}) before '{text}':\n" + "".join(seen[-20:]))
        seen.append(line)
        if text in line:
            return seen
    raise AssertionError(f"no '{text}' after {timeout}s")


def load_script(folder, name):
    """The module of ``<folder>/<name>.py`` (the benchmarks are scripts, not a package)."""
    import importlib.util
    import sys
    spec = importlib.util.spec_from_file_location(name, ROOT / folder / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # (a module's dataclasses look their module up there)
    spec.loader.exec_module(module)
    return module


def setting_args(**settings) -> list[str]:
    """The command line's ``--setting NAME=VALUE`` options for these settings (engine.settings)."""
    return [a for name, value in settings.items()
            for a in ("--setting", f"{name}={int(value) if isinstance(value, bool) else value}")]


def seen_index_everywhere(monkeypatch, rows_per_partition: int, run_max: int) -> tuple[dict, list[int]]:
    """Settings that put every level through the seen index (engine.search.seen), small levels too,
    with at most two fragments, its sorted runs partitioned anew past ``run_max`` fingerprints and at
    most 2 committed states' fingerprints held on the driver (pending_max); and the list that gets the
    index's partitions after each re-partition."""
    import engine.accel.seen_index as seen
    settings = dict(index_from=0, driver_seen_max=0, max_fragments=2, rows_per_partition=rows_per_partition,
                    min_partitions=1, run_max=run_max, pending_max=2)
    parts = []
    real = seen.SeenIndex._repartition
    monkeypatch.setattr(seen.SeenIndex, "_repartition", lambda self: real(self) or parts.append(self.partitions))
    return settings, parts


def run_cli(capsys, *argv):
    """Run the command line in this process (sharing the Spark session); return (code, stdout, stderr)."""
    from engine.cli.main import main
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


ENGINE = [sys.executable, "-m", "engine"]


def engine_env():
    """A command of the engine's own, not handed to an engine server or to a SPARK_REMOTE set around the suite."""
    env = {**os.environ, "SSE_SERVER": "off"}
    env.pop("SPARK_REMOTE", None)
    return env


def run_engine(*argv, timeout=1800, **kw):
    """Run the command line in a process of its own (a JVM of its own); the completed process."""
    return subprocess.run([*ENGINE, *[str(a) for a in argv]], cwd=ROOT, env=engine_env(), capture_output=True,
                          text=True, timeout=timeout, **kw)


# --- runs shared by the data-platform tests (tests/test_platform_*.py), made once per session ----
from platform_util import OK_ARGS, counter_run  # noqa: E402

def _warehouse(tmp_path_factory, name):
    # SSE_TEST_KEEP_WAREHOUSE=DIR keeps these runs between pytest sessions while developing: a
    # finished run is then read back from its outcome table (from_cache), with the same figures.
    keep = os.environ.get("SSE_TEST_KEEP_WAREHOUSE")
    return Path(keep) / name if keep else tmp_path_factory.mktemp(name) / "wh"


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


LONG_REASON = ("long run (an oracle run of minutes, a profiling tool end to end, or a slow test's further "
               "variant); run with SSE_LONG_TESTS=1 python -m pytest -q (README: Tests)")


def pytest_configure(config):
    config.addinivalue_line("markers", f"long: {LONG_REASON}")


def pytest_collection_modifyitems(config, items):
    # The default suite must stay under 20 minutes on 2 cores (CI); the oracle runs of minutes each,
    # the profiling tools' runs end to end, and the further variants of a slow test (each behaviour
    # once in the default suite: another setting or path through the same stage) are marked long and
    # run when SSE_LONG_TESTS=1.
    if os.environ.get("SSE_LONG_TESTS"):
        return
    skip = pytest.mark.skip(reason=LONG_REASON)
    for item in items:
        if "long" in item.keywords:
            item.add_marker(skip)
