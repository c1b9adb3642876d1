"""Symmetry reduction: the fingerprint of a state is the smallest over all permutations of the
symmetric sets of model values, so every state of an orbit shares one fingerprint (TLC's SYMMETRY).

The state itself is stored as generated; only the de-duplication key is canonical. A permutation
acts on a state through its declared shape (``symmetry:`` under a variable in the schema):
- every string equal to a symmetric model value is renamed;
- ``index: {PATH: Set}``: the array at PATH is a function over Set, one entry per value in Set's
  order, so its entries move: new[j] = renamed(old[k]) where pi(Set[k]) = Set[j];
- ``sets: [PATH, ...]``: the array at PATH is a set (or a bag) kept sorted, so it is sorted again
  after renaming.
PATH is relative to the variable: ``""`` is the variable, ``[]`` steps into an array's elements and
``.name`` into a struct's field, e.g. ``"[].fragments[].ensemble"``.

Everything is one SQL expression: the permutations are a literal array, and a ``transform`` over
it permutes the state and hashes it; ``array_min`` picks the canonical fingerprint.
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql.types import ArrayType, DataType, StringType, StructType

from .errors import ModelError
from .fingerprint import fingerprint_sql

__all__ = ["SymmetryShape", "parse_shape", "permutations", "canonical_fingerprint_sql", "check_paths"]

_PATH = re.compile(r"^((\[\])|(\.[A-Za-z_][A-Za-z0-9_]*))*$")


@dataclass(frozen=True)
class SymmetryShape:
    """What a permutation does to one variable beyond renaming its strings."""

    index: dict[str, str]      # path -> symmetric set the array at path is indexed by
    sets: tuple[str, ...]      # paths of arrays kept sorted


def parse_shape(schema_path: Path, var: str, spec: Any, symmetric: list[str]) -> SymmetryShape:
    if spec is None:
        return SymmetryShape({}, ())
    if not isinstance(spec, dict) or set(spec) - {"index", "sets"}:
        raise ModelError(f"{schema_path}: variable {var}: 'symmetry:' takes 'index: {{PATH: Set}}' "
                         f"and 'sets: [PATH, ...]', got {spec!r}")
    index = spec.get("index") or {}
    sets = spec.get("sets") or []
    if not isinstance(index, dict) or not isinstance(sets, list):
        raise ModelError(f"{schema_path}: variable {var}: 'symmetry: index:' is a mapping PATH -> Set "
                         f"and 'symmetry: sets:' a list of PATHs")
    for path in [*index, *sets]:
        if not isinstance(path, str) or not _PATH.match(path):
            raise ModelError(f"{schema_path}: variable {var}: symmetry path {path!r} is not a path "
                             f"like \"\", \"[]\", \".field\" or \"[].field[]\"")
    for path, s in index.items():
        if s not in symmetric:
            raise ModelError(f"{schema_path}: variable {var}: symmetry index {path!r} names {s!r}, "
                             f"which is not a symmetry set (symmetry: {symmetric})")
    return SymmetryShape(dict(index), tuple(sets))


def _walk(dtype: DataType, path: str) -> DataType | None:
    for step in re.findall(r"\[\]|\.[A-Za-z_][A-Za-z0-9_]*", path):
        if step == "[]":
            if not isinstance(dtype, ArrayType):
                return None
            dtype = dtype.elementType
        else:
            if not isinstance(dtype, StructType) or step[1:] not in dtype.fieldNames():
                return None
            dtype = dtype[step[1:]].dataType
    return dtype


def check_paths(schema_path: Path, schema: StructType, shapes: dict[str, SymmetryShape]) -> None:
    """Every declared path must name an array in the variable's type."""
    for var, shape in shapes.items():
        for path in [*shape.index, *shape.sets]:
            if not isinstance(_walk(schema[var].dataType, path), ArrayType):
                raise ModelError(f"{schema_path}: variable {var}: symmetry path {path!r} is not an "
                                 f"array in its type {schema[var].dataType.simpleString()}")


def permutations(sets: dict[str, list[str]]) -> list[dict[str, str]]:
    """Every renaming that permutes each symmetric set within itself (the product group)."""
    names = list(sets)
    per_set = [[dict(zip(sets[n], p)) for p in itertools.permutations(sets[n])] for n in names]
    out = []
    for combo in itertools.product(*per_set):
        m: dict[str, str] = {}
        for part in combo:
            m.update(part)
        out.append(m)
    return out


def _has_string(dtype: DataType) -> bool:
    if isinstance(dtype, StringType):
        return True
    if isinstance(dtype, ArrayType):
        return _has_string(dtype.elementType)
    if isinstance(dtype, StructType):
        return any(_has_string(f.dataType) for f in dtype.fields)
    return False


def _sql_str(s: str) -> str:
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


class _Permuter:
    def __init__(self, shape: SymmetryShape, perm: str):
        self.shape, self.perm = shape, perm
        self.paths = set(shape.index) | set(shape.sets)

    def touched(self, dtype: DataType, path: str) -> bool:
        return _has_string(dtype) or any(p.startswith(path) for p in self.paths)

    def expr(self, e: str, dtype: DataType, path: str, depth: int) -> str:
        if not self.touched(dtype, path):
            return e
        if isinstance(dtype, StringType):
            return f"IF({e} IS NULL, NULL, coalesce(try_element_at({self.perm}.m, {e}), {e}))"
        if isinstance(dtype, StructType):
            fields = ", ".join(
                f"'{f.name}', {self.expr(f'{e}.`{f.name}`', f.dataType, f'{path}.{f.name}', depth)}"
                for f in dtype.fields)
            return f"IF({e} IS NULL, NULL, named_struct({fields}))"
        if isinstance(dtype, ArrayType):
            v = f"_y{depth}"
            inner = self.expr(v, dtype.elementType, path + "[]", depth + 1)
            out = e if inner == v else f"transform({e}, {v} -> {inner})"
            if path in self.shape.sets:
                out = f"array_sort({out})"
            if path in self.shape.index:
                k = f"_k{depth}"
                out = f"IF({e} IS NULL, NULL, transform({self.perm}.`{self.shape.index[path]}`, {k} -> ({out})[{k}]))"
            return out
        return e


def canonical_fingerprint_sql(schema: StructType, shapes: dict[str, SymmetryShape],
                              sets: dict[str, list[str]]) -> str:
    """A struct<a, b> expression: the smallest (fp, fp2) over every permutation of ``sets``."""
    perm_literals = []
    for m in permutations(sets):
        pairs = ", ".join(f"{_sql_str(k)}, {_sql_str(v)}" for k, v in m.items() if k != v)
        mapping = f"map({pairs})" if pairs else "CAST(map() AS MAP<STRING, STRING>)"
        inv = {v: k for k, v in m.items()}
        # index arrays: position j of the permuted function holds the old entry of pi^-1(Set[j])
        idx = ", ".join(
            f"'{n}', array({', '.join(str(vals.index(inv[x])) for x in vals)})" for n, vals in sets.items())
        perm_literals.append(f"named_struct('m', {mapping}, {idx})")
    perms = f"array({', '.join(perm_literals)})"
    fields = []
    for f in schema.fields:
        shape = shapes.get(f.name, SymmetryShape({}, ()))
        fields.append(f"'{f.name}', {_Permuter(shape, '_p').expr(f'`{f.name}`', f.dataType, '', 0)}")
    permuted = f"transform({perms}, _p -> named_struct({', '.join(fields)}))"
    fp1, fp2 = fingerprint_sql([(f.name, f.dataType) for f in schema.fields], prefix="_q.")
    return f"array_min(transform({permuted}, _q -> named_struct('a', {fp1}, 'b', {fp2})))"
