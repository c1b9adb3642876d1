"""Counterexamples in the Informal Trace Format (ITF) of Apalache and Quint.

https://apalache-mc.org/docs/adr/015adr-trace.html. A trace is ``{"#meta", "vars", "states"}``; each
state maps every variable to a value: integers as ``{"#bigint": "n"}``, sequences as JSON arrays,
records as objects, sets as ``{"#set": [...]}``, functions as ``{"#map": [[k, v], ...]}``.

Spark's type alone does not say whether an array is a TLA+ sequence, a set (a sorted distinct array)
or a function over a fixed domain, so a variable may carry an ``itf:`` hint in its schema:

    T ::= seq[(T)] | set[(T)] | fun(CONST[, T]) | pairs[(T)] | rec{f: T, ...} | int | nil(N) | bool | str | any

``fun(Clients)`` is an array in the order of the constant set ``Clients`` (written as a map from its
values); ``pairs`` is a sorted array of two-field structs (key, value) written as a map; ``nil(-1)``
is an integer whose value -1 stands for the model value ``Nil`` (a model that keeps an integer column
NOT NULL). Without a hint arrays are sequences and structs records. SQL NULL stands for the model value ``Nil`` and is
written as the string ``"Nil"``; in a string column, where a model may also hold the string
``'Nil'`` itself, as ``{"#unserializable": "Nil"}``, so that reading it back gives NULL again. Reading (``read_itf``) uses the itf-py package and the same hints.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql.types import (
    ArrayType, BooleanType, DataType, IntegerType, LongType, ShortType, ByteType, StringType, StructType,
)

from engine.errors import UsageError

__all__ = ["Shape", "parse_shape", "to_itf", "from_itf", "write_itf", "read_itf", "NIL"]

NIL = "Nil"
_TOKEN = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*|-?[0-9]+|[(){},:])")


@dataclass
class Shape:
    kind: str                       # seq | set | fun | pairs | rec | int | nil | bool | str | any
    inner: "Shape | None" = None
    domain: str = ""                # fun: the constant set naming the domain
    fields: dict[str, "Shape"] = field(default_factory=dict)
    nil: int | None = None          # nil(N): the integer standing for Nil


ANY = Shape("any")


def parse_shape(text: str, where: str = "") -> Shape:
    """Parse an ``itf:`` hint; errors name ``where`` (the schema file and variable)."""
    toks = [m.group(1) for m in _TOKEN.finditer(text)]
    if "".join(toks) != re.sub(r"\s+", "", text):
        raise UsageError(f"{where}: cannot read itf hint {text!r}")
    pos = 0

    def peek() -> str:
        return toks[pos] if pos < len(toks) else ""

    def take(expected: str | None = None) -> str:
        nonlocal pos
        if pos >= len(toks) or (expected and toks[pos] != expected):
            raise UsageError(f"{where}: itf hint {text!r}: expected {expected or 'more'} at token {pos + 1}")
        pos += 1
        return toks[pos - 1]

    def shape() -> Shape:
        word = take()
        if word in ("int", "bool", "str", "any"):
            return Shape(word)
        if word == "nil":
            take("(")
            value = take()
            if not re.fullmatch(r"-?[0-9]+", value):
                raise UsageError(f"{where}: itf hint {text!r}: nil(N) takes an integer, got {value!r}")
            take(")")
            return Shape("nil", nil=int(value))
        if word in ("seq", "set", "pairs"):
            inner = ANY
            if peek() == "(":
                take("(")
                inner = shape()
                take(")")
            return Shape(word, inner)
        if word == "fun":
            take("(")
            dom = take()
            inner = ANY
            if peek() == ",":
                take(",")
                inner = shape()
            take(")")
            return Shape("fun", inner, domain=dom)
        if word == "rec":
            take("{")
            fields = {}
            while peek() != "}":
                name = take()
                take(":")
                fields[name] = shape()
                if peek() == ",":
                    take(",")
            take("}")
            return Shape("rec", fields=fields)
        raise UsageError(f"{where}: itf hint {text!r}: unknown shape {word!r} "
                         "(seq, set, fun(CONST), pairs, rec{...}, int, nil(N), bool, str, any)")

    out = shape()
    if pos != len(toks):
        raise UsageError(f"{where}: itf hint {text!r}: unexpected {toks[pos]!r}")
    return out


def _is_int(dt: DataType) -> bool:
    return isinstance(dt, (IntegerType, LongType, ShortType, ByteType))


# --- writing -----------------------------------------------------------------------------------
def to_itf(value: Any, dt: DataType, shape: Shape, constants: dict[str, Any]) -> Any:
    """A Spark value (as collected to Python) in ITF's JSON encoding."""
    if value is None:
        return {"#unserializable": NIL} if isinstance(dt, StringType) else NIL
    if shape.kind == "nil" and value == shape.nil:
        return NIL
    if isinstance(dt, ArrayType):
        et = dt.elementType
        inner = shape.inner or ANY
        if shape.kind == "set":
            return {"#set": [to_itf(v, et, inner, constants) for v in value]}
        if shape.kind == "fun":
            keys = constants.get(shape.domain)
            if not isinstance(keys, list) or len(keys) != len(value):
                raise UsageError(f"itf hint fun({shape.domain}): the constant is not a set of {len(value)} values")
            return {"#map": [[_scalar(k), to_itf(v, et, inner, constants)] for k, v in zip(keys, value)]}
        if shape.kind == "pairs":
            assert isinstance(et, StructType) and len(et.fields) == 2, "pairs needs array<struct<key, value>>"
            kf, vf = et.fields
            return {"#map": [[to_itf(v[kf.name], kf.dataType, ANY, constants),
                              to_itf(v[vf.name], vf.dataType, inner, constants)] for v in value]}
        return [to_itf(v, et, inner, constants) for v in value]
    if isinstance(dt, StructType):
        fields = shape.fields if shape.kind == "rec" else {}
        return {f.name: to_itf(value[f.name], f.dataType, fields.get(f.name, ANY), constants) for f in dt.fields}
    return _scalar(value)


def _scalar(v: Any) -> Any:
    if isinstance(v, bool) or isinstance(v, str):
        return v
    if isinstance(v, int):
        return {"#bigint": str(v)}
    return v


def write_itf(path: Path, trace: list[dict[str, Any]], schema: StructType, shapes: dict[str, Shape],
              meta: dict[str, Any], constants: dict[str, Any], loop: int | None = None) -> Path:
    """``trace`` as an ITF file. A lasso (a liveness counterexample) carries its loop index, the
    Apalache/Quint convention: the last state is followed by state ``loop`` again (``loop`` the last
    index: it stutters for ever). It is written both in ``#meta`` and as the top-level ``loop`` that
    ADR-015 and itf-py read."""
    states = []
    for i, step in enumerate(trace):
        s = {"#meta": {"index": i, "action": step["action"]}}
        for f in schema.fields:
            s[f.name] = to_itf(step["state"][f.name], f.dataType, shapes.get(f.name, ANY), constants)
        states.append(s)
    doc = {"#meta": {"format": "ITF", "format-description": "https://apalache-mc.org/docs/adr/015adr-trace.html",
                     **meta, **({"loop": loop} if loop is not None else {})},
           "vars": [f.name for f in schema.fields], "states": states}
    if loop is not None:
        doc["loop"] = loop
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1))
    tmp.replace(path)  # never a half-written trace file
    return path


# --- reading -----------------------------------------------------------------------------------
def from_itf(value: Any, dt: DataType, shape: Shape, constants: dict[str, Any], where: str) -> Any:
    """An itf-py value back into the engine's encoding (sets sorted, functions in domain order)."""
    from itf_py.itf import ITFUnserializable

    if isinstance(value, ITFUnserializable):
        if value.value == NIL:
            return None  # (SQL NULL in a string column: to_itf)
        value = value.value
    if shape.kind == "nil" and value == NIL:
        return shape.nil
    if value == NIL and not isinstance(dt, StringType):
        return None
    if isinstance(dt, ArrayType):
        et = dt.elementType
        inner = shape.inner or ANY
        if isinstance(value, dict):  # a function: ordered by the domain constant, or pairs sorted by key
            if shape.kind == "fun":
                keys = constants.get(shape.domain) or []
                missing = [k for k in keys if k not in value]
                if missing or len(value) != len(keys):
                    raise UsageError(f"{where}: function domain {sorted(value)} is not {shape.domain} = {keys}")
                return [from_itf(value[k], et, inner, constants, where) for k in keys]
            if shape.kind == "pairs" and isinstance(et, StructType):
                kf, vf = et.fields
                rows = [{kf.name: from_itf(k, kf.dataType, ANY, constants, where),
                         vf.name: from_itf(v, vf.dataType, inner, constants, where)} for k, v in value.items()]
                return sorted(rows, key=lambda r: _order(r[kf.name]))
            raise UsageError(f"{where}: a function where the schema has an array (give an itf: hint)")
        if isinstance(value, (frozenset, set)):
            items = [from_itf(v, et, inner, constants, where) for v in value]
            return sorted(items, key=_order)
        if isinstance(value, (list, tuple)):
            if shape.kind == "pairs" and isinstance(et, StructType):  # TLC prints a function on 1..n as <<...>>
                kf, vf = et.fields
                return [{kf.name: i + 1, vf.name: from_itf(v, vf.dataType, inner, constants, where)}
                        for i, v in enumerate(value)]
            items = [from_itf(v, et, inner, constants, where) for v in value]
            return sorted(items, key=_order) if shape.kind == "set" else items
        raise UsageError(f"{where}: expected a sequence, set or function, got {value!r}")
    if isinstance(dt, StructType):
        if hasattr(value, "_asdict"):
            value = value._asdict()
        if isinstance(value, (list, tuple)) and not value:
            value = {}
        if not isinstance(value, dict):
            raise UsageError(f"{where}: expected a record with fields {[f.name for f in dt.fields]}, got {value!r}")
        fields = shape.fields if shape.kind == "rec" else {}
        names = [f.name for f in dt.fields]
        unknown = sorted(set(value) - set(names))
        if unknown:
            raise UsageError(f"{where}: record fields {unknown} are not among the schema's {names}")
        # A struct that stands for several record types (a message of any type) holds each type's
        # fields; a record without one of them (TLC's text, written per type) has it NULL.
        return {f.name: from_itf(value[f.name], f.dataType, fields.get(f.name, ANY), constants, f"{where}.{f.name}")
                if f.name in value else None for f in dt.fields}
    if _is_int(dt):
        if isinstance(value, bool) or not isinstance(value, int):
            raise UsageError(f"{where}: expected an integer, got {value!r}")
        return int(value)
    if isinstance(dt, BooleanType):
        if not isinstance(value, bool):
            raise UsageError(f"{where}: expected a boolean, got {value!r}")
        return value
    if isinstance(dt, StringType):
        if not isinstance(value, str):
            raise UsageError(f"{where}: expected a string or model value, got {value!r}")
        return value
    return value


def _order(v: Any) -> Any:
    """Spark's array_sort order for the engine's values: NULL first, structs field by field."""
    if v is None:
        return (0,)
    if isinstance(v, dict):
        return (1, tuple(_order(x) for x in v.values()))
    if isinstance(v, list):
        return (1, tuple(_order(x) for x in v))
    return (1, v)


def read_itf(path: Path) -> tuple[dict[str, Any], list[str], list[dict[str, Any]]]:
    """(meta, vars, states as {var: itf-py value} plus '#action') from an ITF file, via itf-py. A
    lasso's loop index (the top-level ``loop``, or ``#meta``'s) is put in meta as ``loop``."""
    import itf_py

    path = Path(path)
    try:
        data = json.loads(path.read_text())
        trace = itf_py.trace_from_json(data)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"{path}: not an ITF trace ({exc.__class__.__name__}: {exc})") from None
    states = []
    for s in trace.states:
        row = dict(s.values)
        row["#action"] = (s.meta or {}).get("action")
        states.append(row)
    meta = dict(trace.meta or {})
    loop = trace.loop if trace.loop is not None else meta.get("loop")
    if loop is not None:
        meta["loop"] = int(loop)
    return meta, list(trace.vars), states
