"""Fingerprints: 128 bits from two differently seeded xxhash64 over an unambiguous encoding.

Spark's xxhash64 walks nested values without recording lengths or nulls, so on its own
``([1,2],[3])`` and ``([1],[2,3])`` hash alike, as do ``(null,"a")`` and ``("a",null)``. The state
is therefore hashed as bytes that determine it. Two schemes (the setting ``fingerprint``):

- ``row-bytes`` (the default): the state in Spark's own binary row format, an UnsafeRow, made by
  the engine's JVM function ``sse_row_bytes`` (engine/runtime/jvm/RowBytes.java, engine.runtime.jvm_ext). For a
  given schema the bytes are a function of the value alone (null fields and padding are zeroed:
  Spark's hash aggregation groups rows by comparing them) and can be read back, so two states never
  share them. Making them is a copy of the row, cheaper than writing the JSON text below.
- ``json``: the state as JSON text (``to_json``), with public SQL functions alone: where the JVM
  function is not to be had (no JDK to compile it, Spark Connect). Brackets delimit every array and object, every field is named (by position), every
  string is quoted and escaped, so two different states are two different texts. A struct field
  that is null is left out of its object (for a fixed schema that says the field is null as surely
  as ``null`` would); a null in an array is written ``null``.

Columns of types that neither writes exactly and distinctly (floating point: -0.0 and the NaNs;
decimals, dates, times, binary) are hashed with an explicit null flag and length per value
(``encode_args``). Two 64-bit hashes seeded differently make the fingerprint 128 bits: with N
distinct states the chance that any two share a fingerprint is about N^2 / 2^129 (below 1e-20 for a
billion states). A run keeps the scheme it started with (its run.json): resumed, it fingerprints
the same way, so its stored fingerprints stay comparable.
"""
from __future__ import annotations

import sys

from pyspark.sql.types import (ArrayType, BinaryType, BooleanType, ByteType, DataType, IntegerType, LongType,
                               MapType, ShortType, StringType, StructField, StructType)

from engine.settings import Settings

__all__ = ["ROW_BYTES", "JSON", "encode_args", "fingerprint_note", "fingerprint_sql", "hash_pair", "json_exact",
           "scheme", "scheme_name"]

ROW_BYTES, JSON = "row-bytes", "json"
# The names recorded in a run's run.json and reports.
_SCHEME_NAMES = {ROW_BYTES: "unsaferow-xxhash64x2", JSON: "json-positional-nonull-xxhash64x2"}
_NOTES = {
    ROW_BYTES: "two differently seeded xxhash64 over the state in Spark's binary row format (UnsafeRow)",
    JSON: "two differently seeded xxhash64 over the state as JSON text, null fields left out",
}

# Any constant works; it seeds the second hash through xxhash64's chaining of its arguments.
_SECOND_SEED = "CAST(-7046029254386353131 AS BIGINT)"


def scheme(settings: Settings, spark=None) -> str:
    """The scheme a run fingerprints states with: ``row-bytes`` when the settings ask for it and the
    engine's JVM function can be had (engine.runtime.jvm_ext: compiled, or in ``spark``'s running JVM),
    else ``json``."""
    if settings.fingerprint == JSON:
        return JSON
    import engine.runtime.jvm_ext as jvm_ext
    if "RowBytes" in jvm_ext.disabled(settings):
        print("engine: fingerprint: the state's JSON text, as on the portable path (RowBytes disabled by the "
              "settings)", file=sys.stderr)
        return JSON
    import engine.runtime.jvm_ext as jvm_ext
    return ROW_BYTES if jvm_ext.available(settings, spark) else JSON


def scheme_name(using: str) -> str:
    """A scheme's name as recorded in a run's run.json and reports."""
    return _SCHEME_NAMES[using]


def fingerprint_note(using: str) -> str:
    return (f"128-bit fingerprints ({_NOTES[using]}); collision probability below N^2/2^129 for N "
            "distinct states")


def encode_args(expr: str, dtype: DataType, depth: int = 0) -> list[str]:
    """SQL expressions that, hashed in order, determine ``expr``'s value unambiguously."""
    if isinstance(dtype, StructType):
        out = [f"isnull({expr})"]
        for f in dtype.fields:
            out.extend(encode_args(f"{expr}.`{f.name}`", f.dataType, depth))
        return out
    if isinstance(dtype, ArrayType):
        var = f"_e{depth}"
        inner = encode_args(var, dtype.elementType, depth + 1)
        body = inner[0] if len(inner) == 1 else f"struct({', '.join(inner)})"
        return [f"isnull({expr})", f"size({expr})", f"transform({expr}, {var} -> {body})"]
    if isinstance(dtype, MapType):
        raise ValueError("map types cannot be state variables (Spark cannot group or join on them)")
    if isinstance(dtype, (StringType, BinaryType)):
        return [f"isnull({expr})", f"octet_length({expr})", expr]
    return [f"isnull({expr})", expr]


def _json_exact(dtype: DataType) -> bool:
    """Whether ``to_json`` writes every value of the type exactly and distinctly (and so does
    UnsafeRow: these types have no two encodings of one value, as -0.0 and 0.0 are)."""
    if isinstance(dtype, ArrayType):
        return _json_exact(dtype.elementType)
    if isinstance(dtype, StructType):
        return all(_json_exact(f.dataType) for f in dtype.fields)
    return isinstance(dtype, (BooleanType, ByteType, ShortType, IntegerType, LongType, StringType))


def json_exact(schema: StructType) -> bool:
    """Whether every column of ``schema`` is written as JSON exactly and read back as the same value."""
    return all(_json_exact(f.dataType) for f in schema.fields)


def _positional(dtype: DataType) -> DataType:
    """``dtype`` with every struct field named by its position (``a``, ``b``, ..., ``z``, ``ba``, ...)."""
    if isinstance(dtype, StructType):
        return StructType([StructField(_position_name(i), _positional(f.dataType), f.nullable)
                           for i, f in enumerate(dtype.fields)])
    if isinstance(dtype, ArrayType):
        return ArrayType(_positional(dtype.elementType), dtype.containsNull)
    return dtype


def _position_name(i: int) -> str:
    name = ""
    while True:
        name = chr(ord("a") + i % 26) + name
        i //= 26
        if not i:
            return name


def fingerprint_sql(columns: list[tuple[str, DataType]], prefix: str = "", *, using: str) -> tuple[str, str]:
    """The two halves of the fingerprint as SQL expressions over the named columns (fields of
    ``prefix``, a struct, when given), in the scheme ``using`` (``scheme``). Both hash the same bytes;
    Spark makes them once per row (common subexpression elimination) where the two are in one
    projection.

    As JSON, the state is cast to a struct whose fields, at every level, are named by position
    (``a``, ``b``, ...) before it is written: the same text for the same value, with less of it for
    Jackson to write than with the variables' own names."""
    if using not in _SCHEME_NAMES:
        raise ValueError(f"unknown fingerprint scheme {using!r}")
    exact, exact_types, args = [], [], []
    for name, dtype in columns:
        if _json_exact(dtype):
            exact.append(f"'{name}', {prefix}`{name}`")
            exact_types.append(StructField(name, dtype))
        else:
            args.extend(encode_args(f"{prefix}`{name}`", dtype))
    if exact and using == ROW_BYTES:
        args.insert(0, f"sse_row_bytes(named_struct({', '.join(exact)}))")
    elif exact:
        short = _positional(StructType(exact_types)).simpleString()
        args.insert(0, f"to_json(CAST(named_struct({', '.join(exact)}) AS {short}), "
                       f"map('ignoreNullFields', 'true'))")
    return hash_pair(args)


def hash_pair(args: list[str]) -> tuple[str, str]:
    """The fingerprint's two differently seeded ``xxhash64`` over the SQL expressions ``args``."""
    joined = ", ".join(args)
    return f"xxhash64({joined})", f"xxhash64({_SECOND_SEED}, {joined})"
