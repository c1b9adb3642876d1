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


def test_nested_nulls_strings_and_boundaries_are_part_of_the_fingerprint(spark):
    """Within arrays of structs (hashed as JSON text, null fields left out): a null field, a struct
    whose every field is null, a null element, a string holding JSON punctuation, and where one array
    ends and the next begins."""
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
    got = fps(spark, rows, t, ddl)
    assert len(set(got[:-1])) == len(rows) - 1 and got[-1] == got[-2]


def test_columns_json_cannot_write_exactly_keep_the_typed_encoding(spark):
    from pyspark.sql.types import DoubleType
    a, _ = fingerprint_sql([("p", IntegerType()), ("q", DoubleType())])
    assert a.startswith("xxhash64(to_json(CAST(named_struct('p', `p`) AS struct<a:int>)") and "isnull(`q`), `q`" in a
    import math
    x, y, z = fps(spark, [(1, 0.1), (1, math.nextafter(0.1, 1.0)), (1, 0.1)], [IntegerType(), DoubleType()],
                  "p int, q double")
    assert x != y and x == z  # one unit in the last place apart
