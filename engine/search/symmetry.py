"""Symmetry reduction: a state's de-duplication key is the fingerprint of the smallest state of its
orbit (every permutation of the symmetric sets of model values applied to it, compared as Spark
compares structs), so every state of an orbit shares one fingerprint (TLC's SYMMETRY). TLC keeps the
smallest fingerprint over the orbit instead; both pick one representative per orbit, so the
de-duplication, and every count, is the same. The smallest state costs one hash where the smallest
fingerprint costs one per permutation, and a cheap key spares most permutations being applied in
full.

The state itself is stored as generated; only the de-duplication key is canonical. A permutation
acts on a state through its declared shape (``symmetry:`` under a variable in the schema):
- every string equal to a symmetric model value is renamed;
- ``index: {PATH: Set}``: the array at PATH is a function over Set, one entry per value in Set's
  order, so its entries move: new[j] = renamed(old[k]) where pi(Set[k]) = Set[j];
- ``sets: [PATH, ...]``: the array at PATH is a set (or a bag) kept sorted, so it is sorted again
  after renaming.
PATH is relative to the variable: ``""`` is the variable, ``[]`` steps into an array's elements and
``.name`` into a struct's field, e.g. ``"[].fragments[].ensemble"``.

Everything is SQL. Up to ``literal_permutations`` (a setting), each permutation's image is written
out with literals (renaming is a CASE, a function's entries are picked by position), a few
projections pick the images with the smallest cheap key, ``array_min`` the smallest of those, and
that one is hashed. The identity's image is the state's own columns: nothing to rename, re-index
or re-sort.
Spark compiles literal images where it interprets lambdas. Beyond that many permutations the
permutations are a literal array and a ``transform`` over it permutes the state, so the SQL does not
grow with them. Sets are re-sorted with ``sort_array`` (a comparator-free sort; ``array_sort`` calls
a lambda per comparison).
"""
from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from pyspark.sql.types import (ArrayType, BooleanType, ByteType, DataType, IntegerType, LongType, ShortType,
                               StringType, StructType)

from engine.errors import ModelError
from engine.search.encoding import ROW_BYTES, fingerprint_sql, hash_pair

__all__ = ["SymmetryShape", "parse_shape", "permutations", "canonical_fingerprint_stages", "check_paths",
           "helper_plan", "helper_supports"]

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
    both = sorted(set(index) & set(sets))
    if both:
        raise ModelError(f"{schema_path}: variable {var}: symmetry path {both[0]!r} is both 'index' and "
                         f"'sets': a function over a set keeps its entries in the set's order")
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
    """Writes the image of a value under the permutation ``perm``, a lambda variable bound to one
    element of the permutations' literal array (fields ``m``: the renaming as a map, and per set the
    old positions in the new order)."""

    def __init__(self, shape: SymmetryShape, perm: str):
        self.shape, self.perm = shape, perm
        self.paths = set(shape.index) | set(shape.sets)

    def renames(self) -> bool:
        return True

    def touched(self, dtype: DataType, path: str) -> bool:
        return (self.renames() and _has_string(dtype)) or any(p.startswith(path) for p in self.paths)

    def rename(self, e: str) -> str:
        return f"IF({e} IS NULL, NULL, coalesce(try_element_at({self.perm}.m, {e}), {e}))"

    def reindex(self, e: str, set_name: str, entry: Callable[[str], str], depth: int) -> str:
        """The function ``e`` over ``set_name`` with its entries moved and mapped by ``entry``."""
        v, k = f"_y{depth}", f"_k{depth}"
        inner = entry(v)
        out = e if inner == v else f"transform({e}, {v} -> {inner})"
        return f"transform({self.perm}.`{set_name}`, {k} -> ({out})[{k}])"

    def expr(self, e: str, dtype: DataType, path: str, depth: int) -> str:
        if not self.touched(dtype, path):
            return e
        if isinstance(dtype, StringType):
            return self.rename(e)
        if isinstance(dtype, StructType):
            fields = ", ".join(
                f"'{f.name}', {self.expr(f'{e}.`{f.name}`', f.dataType, f'{path}.{f.name}', depth)}"
                for f in dtype.fields)
            return f"IF({e} IS NULL, NULL, named_struct({fields}))"
        if isinstance(dtype, ArrayType):
            def entry(x: str) -> str:
                return self.expr(x, dtype.elementType, path + "[]", depth + 1)
            if path in self.shape.index:
                return f"IF({e} IS NULL, NULL, {self.reindex(e, self.shape.index[path], entry, depth)})"
            v = f"_y{depth}"
            inner = entry(v)
            out = e if inner == v else f"transform({e}, {v} -> {inner})"
            return f"sort_array({out})" if path in self.shape.sets else out
        return e


class _LiteralPermuter(_Permuter):
    """The same image for one permutation known when the SQL is written: renaming is a CASE over
    string literals and a function's entries are picked by literal position, which Spark compiles
    instead of interpreting lambdas."""

    def __init__(self, shape: SymmetryShape, mapping: dict[str, str], positions: dict[str, list[int]]):
        super().__init__(shape, "")
        self.mapping, self.positions = mapping, positions

    def renames(self) -> bool:
        return bool(self.mapping)

    def rename(self, e: str) -> str:
        whens = " ".join(f"WHEN {_sql_str(k)} THEN {_sql_str(v)}" for k, v in self.mapping.items())
        return f"CASE {e} {whens} ELSE {e} END"

    def reindex(self, e: str, set_name: str, entry: Callable[[str], str], depth: int) -> str:
        return "array(" + ", ".join(entry(f"{e}[{i}]") for i in self.positions[set_name]) + ")"


def _key_parts(schema: StructType, shapes: dict[str, SymmetryShape]) -> list[tuple[int, str, list[int] | None]]:
    """The cheap key's parts: the entries of arrays indexed by a symmetric set that hold no model
    value (a bookie's fenced flag, a client's counters), as (the variable's position, the set, the
    positions of the entry's fields kept, or None for the whole entry)."""
    parts = []
    for i, f in enumerate(schema.fields):
        shape = shapes.get(f.name)
        if shape is None or "" not in shape.index or not isinstance(f.dataType, ArrayType):
            continue
        # What the key holds must not depend on the permutation (a literal identity renames no
        # string), so it is chosen as for a permutation that renames every string.
        any_perm = _Permuter(shape, "")
        elem = f.dataType.elementType
        if not any_perm.touched(elem, "[]"):
            parts.append((i, shape.index[""], None))
        elif isinstance(elem, StructType):
            kept = [k for k, g in enumerate(elem.fields) if not any_perm.touched(g.dataType, f"[].{g.name}")]
            if kept:
                parts.append((i, shape.index[""], kept))
    return parts


def _cheap_key(schema: StructType, shapes: dict[str, SymmetryShape],
               permuter: Callable[[SymmetryShape], _Permuter]) -> str | None:
    """The part of a permuted state that costs no renaming (``_key_parts``) as SQL; None if the state
    has no such part."""
    parts = []
    for i, set_name, kept in _key_parts(schema, shapes):
        f = schema.fields[i]
        if kept is None:
            def body(c: str) -> str:
                return c
        else:
            names = [f.dataType.elementType.fields[k].name for k in kept]

            def body(c: str, names=names) -> str:
                return "named_struct(" + ", ".join(f"'{g}', {c}.`{g}`" for g in names) + ")"
        parts.append(f"'{f.name}', {permuter(shapes[f.name]).reindex(f'`{f.name}`', set_name, body, 0)}")
    return f"named_struct({', '.join(parts)})" if parts else None


def helper_supports(schema: StructType) -> bool:
    """Whether the JVM helper ``sse_canonical`` (engine/runtime/jvm/Canonical.java) orders every
    value of the state as Spark does: booleans, integers, strings, arrays and structs."""
    def ok(t: DataType) -> bool:
        if isinstance(t, ArrayType):
            return ok(t.elementType)
        if isinstance(t, StructType):
            return all(ok(f.dataType) for f in t.fields)
        return isinstance(t, (StringType, BooleanType, ByteType, ShortType, IntegerType, LongType))
    return ok(schema)


def helper_plan(schema: StructType, shapes: dict[str, SymmetryShape], sets: dict[str, list[str]]) -> str:
    """What ``sse_canonical`` needs to pick the image the SQL picks, as JSON: the permutations as
    ``_permutation_data`` gives them, each variable's shape and the cheap key's parts."""
    empty = SymmetryShape({}, ())
    key = _key_parts(schema, shapes)
    return json.dumps({
        "perms": [{"m": m, "pos": pos} for m, pos in _permutation_data(sets)],
        "fields": [{"index": shapes.get(f.name, empty).index, "sets": list(shapes.get(f.name, empty).sets)}
                   for f in schema.fields],
        "key": [{"field": i, "set": s, "kept": kept} for i, s, kept in key] if key else None,
    }, separators=(",", ":"), sort_keys=True)


def _permutation_data(sets: dict[str, list[str]]) -> list[tuple[dict[str, str], dict[str, list[int]]]]:
    """Each permutation (the identity first) as (renaming without fixed points, per set the old
    position of each new entry: position j of the permuted function holds the old entry of
    pi^-1(Set[j]))."""
    out = []
    for m in permutations(sets):
        inv = {v: k for k, v in m.items()}
        out.append(({k: v for k, v in m.items() if k != v},
                    {n: [vals.index(inv[x]) for x in vals] for n, vals in sets.items()}))
    return out


def _image(schema: StructType, shapes: dict[str, SymmetryShape],
           permuter: Callable[[SymmetryShape], _Permuter]) -> str:
    fields = ", ".join(f"'{f.name}', {permuter(shapes.get(f.name, SymmetryShape({}, ()))).expr(f'`{f.name}`', f.dataType, '', 0)}"
                       for f in schema.fields)
    return f"named_struct({fields})"


def canonical_fingerprint_stages(schema: StructType, shapes: dict[str, SymmetryShape],
                                 sets: dict[str, list[str]], *, using: str,
                                 literal_permutations: int = 24, helper: bool = False) -> list[list[str]]:
    """Projections, in order: the smallest permutation of the state as ``_q``, then its fingerprint
    as ``_fp`` and ``_fp2`` (one projection, so the two hashes share one evaluation of the state's
    text) in the fingerprint scheme ``using``. Up to ``literal_permutations`` permutations (4! or
    3! x 2!) each is spelt out with literals (see ``_LiteralPermuter``); beyond, one lambda over the
    permutations' array keeps the SQL (and the code Spark generates) from growing with them, and
    picks the same image. ``helper``: the image is the JVM helper ``sse_canonical``'s (the
    accelerator's, where it is loaded: ``helper_supports``), the same one again."""
    fp1, fp2 = fingerprint_sql([(f.name, f.dataType) for f in schema.fields], prefix="_q.", using=using)
    hashed = [[f"{fp1} AS _fp", f"{fp2} AS _fp2"]]
    own = ", ".join(f"'{f.name}', `{f.name}`" for f in schema.fields)
    if helper:
        smallest = f"sse_canonical(named_struct({own}), {_sql_str(helper_plan(schema, shapes, sets))})"
        if using == ROW_BYTES:
            # The helper takes only types whose values row-bytes hashes whole (``helper_supports``), so
            # ``hashed`` is the two hashes of the named struct of the image's fields, whose bytes are
            # the image's own (a row's bytes hold no field names): the same fingerprints. Hashed where
            # it is made, the image is never a column: a projection that carried it beside the state
            # would copy the state twice more, outside the stage's generated code (too many fields).
            h1, h2 = hash_pair([f"sse_row_bytes({smallest})"])
            return [[f"{h1} AS _fp", f"{h2} AS _fp2"]]
        return [[f"{smallest} AS _q"], *hashed]
    perms = _permutation_data(sets)
    if len(perms) > literal_permutations:
        return [[f"{_smallest_image_lambda_sql(schema, shapes, sets)} AS _q"], *hashed]

    def lit(mapping, positions):
        return lambda shape: _LiteralPermuter(shape, mapping, positions)

    keys = [_cheap_key(schema, shapes, lit(*p)) for p in perms]
    # The identity (perms[0]) gives the state itself: its sets are kept sorted and its functions in
    # their set's order (what the shape declares), so re-sorting and re-indexing would copy it unchanged.
    images = [f"named_struct({own})", *(_image(schema, shapes, lit(*p)) for p in perms[1:])]
    if keys[0] is None:
        stages = [[f"array_min(array({', '.join(images)})) AS _q"]]
    else:
        # Separate projections bind each key once: Spark does not merge a projection into the next
        # where that would evaluate an expensive expression twice.
        n = len(perms)
        stages = [[f"{k} AS _ck{i}" for i, k in enumerate(keys)],
                  [f"least({', '.join(f'_ck{i}' for i in range(n))}) AS _ckmin"],
                  [f"array_min(array({', '.join(f'IF(_ck{i} <=> _ckmin, {img}, NULL)' for i, img in enumerate(images))})) AS _q"]]
    return stages + hashed


def _smallest_image_lambda_sql(schema: StructType, shapes: dict[str, SymmetryShape],
                               sets: dict[str, list[str]]) -> str:
    """The smallest permutation of the state, as one expression: a ``transform`` over a literal
    array of the permutations (the form used beyond ``literal_permutations``).

    "Smallest" orders the images first by a cheap key (see ``_cheap_key``), then by the whole
    permuted state; only the permutations that give the smallest cheap key are applied in full.
    Ordering by a function of the image and then the image is still a total order on the images,
    so the choice depends only on the orbit."""
    perm_literals = []
    for mapping, positions in _permutation_data(sets):
        pairs = ", ".join(f"{_sql_str(k)}, {_sql_str(v)}" for k, v in mapping.items())
        m = f"map({pairs})" if pairs else "CAST(map() AS MAP<STRING, STRING>)"
        idx = ", ".join(f"'{n}', array({', '.join(map(str, pos))})" for n, pos in positions.items())
        perm_literals.append(f"named_struct('m', {m}, {idx})")
    perms = f"array({', '.join(perm_literals)})"

    def image(perm: str) -> str:
        return _image(schema, shapes, lambda shape: _Permuter(shape, perm))

    key = _cheap_key(schema, shapes, lambda shape: _Permuter(shape, "_p"))
    if key is None:
        return f"array_min(transform({perms}, _p -> {image('_p')}))"
    keyed = f"transform({perms}, _p -> named_struct('k', {key}, 'p', _p))"
    best = (f"transform(array(array_min(transform(_ks, _x -> _x.k))), _b -> "
            f"filter(_ks, _x -> _x.k <=> _b))[0]")
    return f"transform(array({keyed}), _ks -> array_min(transform({best}, _x -> {image('_x.p')})))[0]"
