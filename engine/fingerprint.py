"""Fingerprints: 128 bits from two independently seeded xxhash64 over an unambiguous encoding.

Spark's xxhash64 walks nested values without recording lengths or nulls, so on its own
``([1,2],[3])`` and ``([1],[2,3])`` hash alike, as do ``(null,"a")`` and ``("a",null)``. The
encoding below prefixes every array with its size, every string with its byte length, and every
value with a null flag, so two different states feed different input to the hash. Two 64-bit
hashes seeded differently make the fingerprint 128 bits: with N distinct states the chance that any
two share a fingerprint is about N^2 / 2^129 (below 1e-20 for a billion states).
"""
from __future__ import annotations

from pyspark.sql.types import ArrayType, BinaryType, DataType, MapType, StringType, StructType

__all__ = ["FINGERPRINT_NOTE", "encode_args", "fingerprint_sql"]

# Any constant works; it seeds the second hash through xxhash64's chaining of its arguments.
_SECOND_SEED = "CAST(-7046029254386353131 AS BIGINT)"

FINGERPRINT_NOTE = (
    "128-bit fingerprints (two differently seeded xxhash64 over a length- and null-prefixed "
    "encoding of the state); collision probability below N^2/2^129 for N distinct states"
)


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


def fingerprint_sql(columns: list[tuple[str, DataType]], prefix: str = "") -> tuple[str, str]:
    """The two halves of the fingerprint as SQL expressions over the named columns (fields of
    ``prefix``, a struct, when given)."""
    args: list[str] = []
    for name, dtype in columns:
        args.extend(encode_args(f"{prefix}`{name}`", dtype))
    joined = ", ".join(args)
    return f"xxhash64({joined})", f"xxhash64({_SECOND_SEED}, {joined})"
