"""The class archive (engine.class_archive): the first run writes Spark's loaded classes as its JVM
exits, the next maps them; --json output stays one JSON object; a truncated archive, a live writer's
lock and SSE_CLASS_ARCHIVE=off are handled."""
import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT, TEST_MODELS
from platform_util import OK_ARGS

from engine.class_archive import ClassArchive


def check_counter(folder, java_options="-XX:+UseParallelGC"):
    argv = [sys.executable, "-m", "engine", "--models", str(TEST_MODELS), "check", "counter", *OK_ARGS,
            "--warehouse", str(folder / "wh"), "--json", "--quiet", "--fresh"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SSE_CLASS_ARCHIVE": str(folder / "cache"),
           "SSE_JAVA_OPTIONS": java_options}
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)


def test_first_run_writes_the_archive_and_the_next_maps_it(tmp_path):
    first = check_counter(tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    # The JVM's class-sharing warnings (hundreds of lines as it writes) do not reach stdout.
    res = json.loads(first.stdout)
    assert (res["distinct_states"], res["depth"]) == (20, 6)
    assert "saving Spark's classes for a faster start" in first.stderr
    written = sorted(p.name for p in (tmp_path / "cache").iterdir())
    assert len(written) == 1 and written[0].startswith("spark-") and written[0].endswith(".jsa"), written
    archive = tmp_path / "cache" / written[0]
    assert archive.stat().st_size == int(archive.stem.rsplit("-", 1)[1]) > 10_000_000

    # -Xshare:on: the JVM refuses to start unless it maps the archive.
    second = check_counter(tmp_path, "-XX:+UseParallelGC -Xshare:on")
    assert second.returncode == 0, second.stderr[-3000:]
    assert (json.loads(second.stdout)["distinct_states"], json.loads(second.stdout)["depth"]) == (20, 6)
    assert "saving Spark's classes" not in second.stderr
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == written


def test_a_truncated_archive_is_removed_not_mapped(tmp_path, monkeypatch):
    monkeypatch.setenv("SSE_CLASS_ARCHIVE", str(tmp_path))
    digest = ClassArchive.configured().digest
    # Mapped, a file shorter than it was written crashes the JVM (SIGBUS).
    cut = tmp_path / f"spark-{digest}-150000000.jsa"
    cut.write_bytes(b"\0" * 1000)
    archive = ClassArchive.configured()
    assert archive.path is None and not cut.exists()
    assert "-XX:ArchiveClassesAtExit=" in archive.jvm_options() and archive.writing


def test_one_writer_at_a_time(tmp_path, monkeypatch):
    monkeypatch.setenv("SSE_CLASS_ARCHIVE", str(tmp_path))
    archive = ClassArchive.configured()
    archive.lock.write_text(str(os.getpid()))  # a live process is writing it
    assert archive.jvm_options() == "" and not archive.writing
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    archive.lock.write_text(dead.stdout.strip())  # its writer is gone: the lock is taken over
    assert "-XX:ArchiveClassesAtExit=" in archive.jvm_options() and archive.writing
    assert archive.lock.read_text() == str(os.getpid())


def test_off(monkeypatch):
    monkeypatch.setenv("SSE_CLASS_ARCHIVE", "off")
    assert ClassArchive.configured() is None


def test_the_driver_jvm_runs_with_the_engines_compiler_thresholds(spark):
    """engine.session.JAVA_OPTIONS reach the JVM: HotSpot reports the C2 threshold the engine sets
    (ten times its default) as the value in force, set on the command line."""
    from engine.session import JAVA_OPTIONS

    if "SSE_JAVA_OPTIONS" in os.environ:
        pytest.skip("SSE_JAVA_OPTIONS replaces the engine's JVM options in this environment")
    jvm = spark._jvm
    bean = jvm.java.lang.management.ManagementFactory.getPlatformMXBean(
        jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean"))
    option = bean.getVMOption("Tier4InvocationThreshold")
    assert "-XX:Tier4InvocationThreshold=50000" in JAVA_OPTIONS.split()
    assert (option.getValue(), option.getOrigin().toString()) == ("50000", "VM_CREATION")
    assert bean.getVMOption("UseParallelGC").getValue() == "true"
