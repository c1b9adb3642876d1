"""Values written as the spec writes them: sets as ``{a, b}``, sequences as ``<<a, b>>``, records as
``[f |-> v]``, functions as ``(k1 :> v1 @@ k2 :> v2)``, TRUE and FALSE, SQL NULL as ``Nil``, a string
bare (as a model value) and the empty string as ``""``.

Spark's types alone do not tell a set from a sequence (both are arrays), so a variable's ``itf:`` hint
in its schema (engine.traces.itf) says which; an array without one is written as a sequence. A
constant's type says it outright (``set<...>``).
"""
from __future__ import annotations

from typing import Any

from engine.traces.itf import ANY, Shape

__all__ = ["format_value", "format_constant", "format_state"]


def format_value(v: Any, shape: Shape | None = None, constants: dict[str, Any] | None = None) -> str:
    """``v`` (a value as Spark returns it: lists, dicts, scalars) in TLA+ notation, by its ``shape``."""
    shape = shape or ANY
    if v is None or (shape.kind == "nil" and v == shape.nil):
        return "Nil"  # SQL NULL (or a nil(N) hint's N) encodes TLA+'s model value Nil
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, dict):
        fields = shape.fields if shape.kind == "rec" else {}
        return "[" + ", ".join(f"{k} |-> {format_value(x, fields.get(k), constants)}" for k, x in v.items()) + "]"
    if isinstance(v, (list, tuple)):
        inner = shape.inner
        if shape.kind == "set":
            return "{" + ", ".join(format_value(x, inner, constants) for x in v) + "}"
        if shape.kind == "fun":
            domain = list((constants or {}).get(shape.domain) or [])
            if len(domain) == len(v):
                return _function([(d, x) for d, x in zip(domain, v)], inner, constants)
        if shape.kind == "pairs" and all(isinstance(x, dict) and len(x) == 2 for x in v):
            return _function([tuple(x.values()) for x in v], inner, constants)
        return "<<" + ", ".join(format_value(x, inner, constants) for x in v) + ">>"
    if isinstance(v, str):
        return v or '""'  # a string is written bare (a model value); the empty string cannot be one
    return str(v)


def _function(pairs: list[tuple[Any, Any]], inner: Shape | None, constants: dict[str, Any] | None) -> str:
    if not pairs:
        return "<<>>"  # TLC prints the empty function as the empty sequence
    return "(" + " @@ ".join(f"{format_value(k, None, constants)} :> {format_value(x, inner, constants)}"
                             for k, x in pairs) + ")"


def format_constant(v: Any) -> str:
    """A constant's value as TLA+ writes it (and a TLC cfg reads it): TRUE/FALSE, {a, b}, 3."""
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, (list, tuple)):
        return "{" + ", ".join(format_constant(x) for x in v) + "}"
    return str(v)


def format_state(state: dict[str, Any], shapes: dict[str, Shape] | None = None,
                 constants: dict[str, Any] | None = None) -> dict[str, str]:
    """Each variable of ``state`` written by ``format_value`` with its shape."""
    shapes = shapes or {}
    return {name: format_value(v, shapes.get(name), constants) for name, v in state.items()}
