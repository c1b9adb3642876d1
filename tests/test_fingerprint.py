"""Fingerprints must tell apart the values Spark's own xxhash64 confuses, in both schemes (the
state's bytes as an UnsafeRow, the engine's default; its JSON text), and give one value one
fingerprint however Spark came to hold it."""
import json
import subprocess
import sys

import pytest
from conftest import TEST_MODELS, short_run_env
import engine.search.encoding as fingerprint
import engine.runtime.jvm_ext as jvm_ext
from engine.errors import EngineError, UsageError
from engine.search.encoding import fingerprint_sql
from engine.settings import Settings
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, IntegerType, StringType, StructType

SCHEMES = [fingerprint.ROW_BYTES, fingerprint.JSON]


def fps(spark, rows, types, ddl, using=None):
    a, b = fingerprint_sql(list(zip(["p", "q"], types)), using=using)
    df = spark.createDataFrame(rows, ddl)
    return [tuple(r) for r in df.selectExpr(a, b).collect()]


def test_the_engine_fingerprints_with_its_jvm_function_by_default(spark):
    assert fingerprint.scheme(Settings(), spark) == fingerprint.ROW_BYTES
    assert fingerprint.scheme(Settings(fingerprint="json"), spark) == fingerprint.JSON
    a, b = fingerprint_sql([("p", IntegerType())], using=fingerprint.ROW_BYTES)
    assert a == "xxhash64(sse_row_bytes(named_struct('p', `p`)))" and "sse_row_bytes" in b
    # one field, null bits (8 bytes), the value's 8-byte slot; the int 7 little-endian
    assert bytes(spark.sql("SELECT sse_row_bytes(7)").first()[0]) == bytes(8) + (7).to_bytes(8, "little")


@pytest.mark.parametrize("using", SCHEMES)
def test_array_boundaries_are_part_of_the_fingerprint(spark, using):
    assert spark.sql("SELECT xxhash64(array(1,2), array(3)) = xxhash64(array(1), array(2,3))").first()[0]
    t = [ArrayType(IntegerType()), ArrayType(IntegerType())]
    x, y, z = fps(spark, [([1, 2], [3]), ([1], [2, 3]), ([1, 2], [3])], t, "p array<int>, q array<int>", using)
    assert x != y and x == z


@pytest.mark.parametrize("using", SCHEMES)
def test_nulls_and_string_boundaries_are_part_of_the_fingerprint(spark, using):
    t = [StringType(), StringType()]
    x, y, z = fps(spark, [(None, "a"), ("a", None), ("ab", "c")], t, "p string, q string", using)
    w, = fps(spark, [("a", "bc")], t, "p string, q string", using)
    assert len({x, y, z, w}) == 4


@pytest.mark.parametrize("using", SCHEMES)
def test_nested_nulls_strings_and_boundaries_are_part_of_the_fingerprint(spark, using):
    """Within arrays of structs: a null field, a struct whose every field is null, a null element, a
    string holding JSON punctuation, and where one array ends and the next begins."""
    from pyspark.sql.types import StructType
    ddl = "p array<struct<a:int, b:string>>, q array<struct<a:int, b:string>>"
    t = [f.dataType for f in StructType.fromDDL(ddl).fields]
    rows = [
        ([{"a": 1, "b": None}], []),
        ([{"a": None, "b": "1"}], []),
        ([None], []),
        ([{"a": None, "b": None}], []),
        ([], [None]),
        ([], []),
        ([{"a": 1, "b": 'x"},{"a":2'}], []),
        ([{"a": 1, "b": "x"}, {"a": 2, "b": None}], []),
        ([{"a": 1, "b": "x"}], [{"a": 2, "b": None}]),
        ([{"a": 1, "b": "x"}], [{"a": 2, "b": None}]),
    ]
    got = fps(spark, rows, t, ddl, using)
    assert len(set(got[:-1])) == len(rows) - 1 and got[-1] == got[-2]


@pytest.mark.parametrize("using", SCHEMES)
def test_one_value_one_fingerprint_however_spark_holds_it(spark, tmp_path, using):
    """The same state from Python rows, from Parquet (Spark's columnar reader), and built by SQL
    (higher-order functions, a struct with a null field, arrays grown and cut) has one fingerprint;
    changing any one value changes it."""
    ddl = "p array<struct<a:int, b:string, c:array<int>>>, q struct<x:boolean, y:array<string>>"
    t = [f.dataType for f in StructType.fromDDL(ddl).fields]
    a, b = fingerprint_sql(list(zip(["p", "q"], t)), using=using)
    row = ([{"a": 1, "b": None, "c": [2, 3]}, {"a": None, "b": "z", "c": []}], {"x": True, "y": ["u", "v"]})
    other = ([{"a": 1, "b": None, "c": [2, 3]}, {"a": None, "b": "z", "c": [0]}], {"x": True, "y": ["u", "v"]})
    df = spark.createDataFrame([row, other], ddl)
    df.write.parquet(str(tmp_path / "p"))
    built = spark.sql(f"""SELECT CAST(array(
            named_struct('a', 1, 'b', CAST(NULL AS STRING), 'c', transform(array(1, 2), v -> v + 1)),
            named_struct('a', CAST(NULL AS INT), 'b', concat('', 'z'), 'c', filter(array(5), v -> v < 0)))
          AS array<struct<a:int, b:string, c:array<int>>>) AS p,
        named_struct('x', 1 < 2, 'y', slice(array('u', 'v', 'w'), 1, 2)) AS q""")
    stored = spark.read.parquet(str(tmp_path / "p")).orderBy(F.expr("size(p[1].c)"))
    got = [tuple(r) for d in (df, stored, built) for r in d.selectExpr(a, b).collect()]
    assert got[0] == got[2] == got[4] and got[1] == got[3] and got[0] != got[1], got


def test_an_unknown_scheme_is_refused():
    with pytest.raises(UsageError, match=r"SSE_FINGERPRINT='md5': expected one of row-bytes, json"):
        Settings.from_env({"SSE_FINGERPRINT": "md5"})


def test_without_a_jdk_the_function_cannot_be_compiled(tmp_path, monkeypatch):
    monkeypatch.setattr(jvm_ext, "_jar", None)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(EngineError, match=r"no Java compiler \(javac\).*RowBytes.java.*needs a JDK"):
        jvm_ext.jar(Settings(jvm_ext=tmp_path / "cache"))
    assert not (tmp_path / "cache").exists()


def test_the_jar_is_compiled_once_per_source_and_pyspark(tmp_path, monkeypatch):
    monkeypatch.setattr(jvm_ext, "_jar", None)
    made = jvm_ext.jar(Settings(jvm_ext=tmp_path))
    assert made.parent == tmp_path and made.name.startswith("sse-ext-") and made.suffix == ".jar"
    assert [p.name for p in tmp_path.iterdir()] == [made.name]  # nothing half-written left
    import zipfile
    assert "sse/RowBytes.class" in zipfile.ZipFile(made).namelist()
    stamp = made.stat().st_mtime_ns
    monkeypatch.setattr(jvm_ext, "_jar", None)
    assert jvm_ext.jar(Settings(jvm_ext=tmp_path)) == made and made.stat().st_mtime_ns == stamp


@pytest.mark.long
def test_a_search_finds_the_same_states_in_either_scheme(tmp_path):
    """The counter model checked in its own JVM with JSON fingerprints and with the default: the
    same figures. A run keeps the scheme it started with (its run.json): run again with the other
    asked for, it is the stored run that answers, with its own scheme."""
    from platform_util import OK_ARGS
    runs = {}

    def run(using, wh):
        argv = [sys.executable, "-m", "engine", "--models", str(TEST_MODELS), "check", "counter", *OK_ARGS,
                "--warehouse", str(tmp_path / wh), "--json", "--quiet"]
        done = subprocess.run(argv, capture_output=True, text=True, env=short_run_env(SSE_FINGERPRINT=using),
                              timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout)

    for using in SCHEMES:
        runs[using] = run(using, using)
    a, b = runs[fingerprint.ROW_BYTES], runs[fingerprint.JSON]
    assert (a["distinct_states"], a["states_generated"], a["depth"]) == (20, b["states_generated"], 6)
    assert (b["distinct_states"], b["depth"]) == (20, 6) and a["run_id"] == b["run_id"]
    assert "UnsafeRow" in a["fingerprint"] and "JSON text" in b["fingerprint"]
    stored = json.loads((tmp_path / fingerprint.JSON / "counter" / b["run_id"] / "run.json").read_text())
    assert stored["fingerprint"] == fingerprint.JSON
    again = run(fingerprint.ROW_BYTES, fingerprint.JSON)
    assert again["from_cache"] and "JSON text" in again["fingerprint"]


@pytest.mark.parametrize("using", SCHEMES)
def test_columns_json_cannot_write_exactly_keep_the_typed_encoding(spark, using):
    from pyspark.sql.types import DoubleType
    a, _ = fingerprint_sql([("p", IntegerType()), ("q", DoubleType())], using=using)
    head = {fingerprint.JSON: "xxhash64(to_json(CAST(named_struct('p', `p`) AS struct<a:int>)",
            fingerprint.ROW_BYTES: "xxhash64(sse_row_bytes(named_struct('p', `p`))"}[using]
    assert a.startswith(head) and "isnull(`q`), `q`" in a
    import math
    x, y, z = fps(spark, [(1, 0.1), (1, math.nextafter(0.1, 1.0)), (1, 0.1)], [IntegerType(), DoubleType()],
                  "p int, q double", using)
    assert x != y and x == z  # one unit in the last place apart
