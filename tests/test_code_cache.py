"""Spark's generated classes kept on disk between runs (engine/runtime/jvm/CodeCache.java, engine.runtime.session).

A new JVM starts with Spark's cache of generated classes empty; here the same JVM's cache is emptied
instead (``invalidateAll``), which is what a later run's JVM sees, with the classes on disk."""
import struct
from pathlib import Path

import pytest

import engine.runtime.session as session
from platform_util import OK_ARGS, counter_run


def _delta(before, after):
    return {k: after[k] - before[k] for k in before}


def _forget_compiled_classes(spark):
    """Empty Spark's own cache of generated classes, as a new JVM's is."""
    jvm = spark._jvm
    cls = jvm.java.lang.Class.forName(session.CODEGEN)
    field = cls.getDeclaredField("cache")
    field.setAccessible(True)
    field.get(None).loadingCache().invalidateAll()


def _figures(res):
    return res["_exit"], res["result"], res["distinct_states"], res["states_generated"], res["depth"]


@pytest.fixture
def code_cache(spark, tmp_path):
    """The session's code cache pointed at an empty folder for the test, then back."""
    if session.code_cache_counts(spark) is None:
        pytest.skip("no code cache in this session: no engine jar (no JDK), or SSE_CODE_CACHE=off")
    folder = tmp_path / "codegen"
    before = spark.sparkContext.getConf().get(session.CODE_CACHE_CONF, "")
    assert spark._jvm.sse.CodeCache.install(str(folder), 256 << 20).startswith("installed")
    yield folder
    if before:
        spark._jvm.sse.CodeCache.install(before, 256 << 20)


def test_a_run_defines_the_classes_an_earlier_run_compiled(spark, tmp_path, code_cache):
    _forget_compiled_classes(spark)
    start = session.code_cache_counts(spark)
    first = counter_run(tmp_path / "wh1", *OK_ARGS)
    cold = _delta(start, session.code_cache_counts(spark))
    files = sorted(code_cache.glob("*.classes"))
    # (a source compiled by two class loaders at once is written twice, to one file)
    assert cold["compiled"] > 0 and cold["written"] == cold["compiled"] >= len(files) > 0
    # each file: the magic, the format's version, the class statistics, the classes
    assert all(f.read_bytes()[:8] == struct.pack(">ii", 0x53534543, 1) for f in files)

    _forget_compiled_classes(spark)
    start = session.code_cache_counts(spark)
    second = counter_run(tmp_path / "wh2", *OK_ARGS)
    warm = _delta(start, session.code_cache_counts(spark))
    assert warm["compiled"] == 0 and warm["written"] == 0 and warm["unreadable"] == 0
    assert warm["hits"] >= cold["compiled"]  # every source again, from disk (both class loaders')
    assert _figures(second) == _figures(first) == (0, "ok", 20, 20, 6)


def test_an_unreadable_file_is_compiled_again(spark, tmp_path, code_cache):
    _forget_compiled_classes(spark)
    first = counter_run(tmp_path / "wh1", *OK_ARGS)
    files = sorted(code_cache.glob("*.classes"))
    for f in files:
        f.write_bytes(b"not a class file")

    _forget_compiled_classes(spark)
    start = session.code_cache_counts(spark)
    second = counter_run(tmp_path / "wh2", *OK_ARGS)
    after = _delta(start, session.code_cache_counts(spark))
    assert after["unreadable"] == len(files) and after["compiled"] == len(files)
    assert _figures(second) == _figures(first)
    assert all(f.read_bytes()[:8] == struct.pack(">ii", 0x53534543, 1) for f in files)


def test_the_folder_is_one_per_engine_jar_and_java(monkeypatch, tmp_path):
    monkeypatch.delenv(session.CODE_CACHE_ENV, raising=False)
    a = session.code_cache_folder("/c/sse-ext-aaaa.jar", "/java25")
    assert a != session.code_cache_folder("/c/sse-ext-bbbb.jar", "/java25")
    assert a != session.code_cache_folder("/c/sse-ext-aaaa.jar", "/java17")
    assert a == session.code_cache_folder("/other/sse-ext-aaaa.jar", "/java25")
    assert session.code_cache_folder(None, "/java25") is None  # no engine jar: Spark's cache alone
    monkeypatch.setenv(session.CODE_CACHE_ENV, "off")
    assert session.code_cache_folder("/c/sse-ext-aaaa.jar", "/java25") is None
    monkeypatch.setenv(session.CODE_CACHE_ENV, str(tmp_path))
    assert session.code_cache_folder("/c/sse-ext-aaaa.jar", "/java25").parent == tmp_path
