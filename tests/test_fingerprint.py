"""Fingerprints must tell apart the values Spark's own xxhash64 confuses."""
from engine.fingerprint import fingerprint_sql
from pyspark.sql.types import ArrayType, IntegerType, StringType


def fps(spark, rows, types, ddl):
    a, b = fingerprint_sql(list(zip(["p", "q"], types)))
    df = spark.createDataFrame(rows, ddl)
    return [tuple(r) for r in df.selectExpr(a, b).collect()]


def test_array_boundaries_are_part_of_the_fingerprint(spark):
    assert spark.sql("SELECT xxhash64(array(1,2), array(3)) = xxhash64(array(1), array(2,3))").first()[0]
    t = [ArrayType(IntegerType()), ArrayType(IntegerType())]
    x, y, z = fps(spark, [([1, 2], [3]), ([1], [2, 3]), ([1, 2], [3])], t, "p array<int>, q array<int>")
    assert x != y and x == z


def test_nulls_and_string_boundaries_are_part_of_the_fingerprint(spark):
    t = [StringType(), StringType()]
    x, y, z = fps(spark, [(None, "a"), ("a", None), ("ab", "c")], t, "p string, q string")
    w, = fps(spark, [("a", "bc")], t, "p string, q string")
    assert len({x, y, z, w}) == 4
