"""Read an error trace as TLC prints it (``State n: <Action ...>`` then ``/\\ var = value`` lines), so
that ``engine replay --tlc`` can check TLC's counterexamples against a translated model.

Values: ``<<...>>`` sequences (lists), ``[f |-> v]`` records and ``(k :> v @@ ...)`` functions (dicts),
``{...}`` sets (frozensets), integers, strings, TRUE/FALSE, and model values such as ``Nil`` (strings).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from engine.errors import UsageError

__all__ = ["read_tlc_trace", "parse_value", "tlc_trace_loop"]

_STATE = re.compile(r"^State (\d+): <([^>]*)>")
_TOKENS = re.compile(r'\s*(<<|>>|\|->|:>|@@|"(?:[^"\\]|\\.)*"|-?\d+|[A-Za-z_][A-Za-z0-9_]*|[\[\]{}(),])')


class _Frozen(dict):
    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(sorted(self.items(), key=repr)))


def _freeze(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, dict):
        return _Frozen({k: _freeze(x) for k, x in v.items()})
    return v


def parse_value(text: str, where: str = "") -> Any:
    toks = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKENS.match(text, pos)
        if not m:
            raise UsageError(f"{where}: cannot read TLC value at {text[pos:pos + 30]!r}")
        toks.append(m.group(1))
        pos = m.end()
    i = 0

    def take(expected: str | None = None) -> str:
        nonlocal i
        if i >= len(toks) or (expected is not None and toks[i] != expected):
            raise UsageError(f"{where}: expected {expected or 'a value'} in TLC value {text.strip()[:80]!r}")
        i += 1
        return toks[i - 1]

    def items(close: str) -> list[Any]:
        out = []
        if toks[i] == close:
            take(close)
            return out
        while True:
            out.append(value())
            if toks[i] == close:
                take(close)
                return out
            take(",")

    def value() -> Any:
        t = take()
        if t == "<<":
            return items(">>")
        if t == "{":
            return frozenset(_freeze(v) for v in items("}"))
        if t == "[":
            rec = {}
            while True:
                name = take()
                take("|->")
                rec[name] = value()
                if toks[i] == "]":
                    take("]")
                    return rec
                take(",")
        if t == "(":
            fn = {}
            while True:
                k = value()
                take(":>")
                fn[_freeze(k)] = value()
                if toks[i] == ")":
                    take(")")
                    return fn
                take("@@")
        if t in ("TRUE", "FALSE"):
            return t == "TRUE"
        if t.startswith('"'):
            return t[1:-1].encode().decode("unicode_escape")
        if re.fullmatch(r"-?\d+", t):
            return int(t)
        return t  # a model value

    v = value()
    if i != len(toks):
        raise UsageError(f"{where}: unexpected {toks[i]!r} in TLC value {text.strip()[:80]!r}")
    return v


def read_tlc_trace(path: Path) -> list[dict[str, Any]]:
    """The states of TLC's error trace in ``path``: {var: value, '#action': name}."""
    path = Path(path)
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror}") from None
    states: list[dict[str, Any]] = []
    cur: dict[str, str] | None = None
    var = None
    for ln in lines:
        m = _STATE.match(ln)
        if m:
            label = m.group(2).split()[0] if m.group(2).strip() else ""
            cur = {"#action": "Init" if label == "Initial" else label}
            states.append(cur)  # type: ignore[arg-type]
            var = None
            continue
        if cur is None:
            continue
        s = ln.strip()
        if s.startswith("/\\ ") and " = " in s:
            var, _, rest = s[3:].partition(" = ")
            var = var.strip()
            cur[var] = rest
        elif s and var is not None and not s.startswith("State ") and not s.startswith("Error"):
            cur[var] += " " + s
        elif not s:
            var = None
    if not states:
        raise UsageError(f"{path}: no 'State n: <...>' lines: not a TLC error trace")
    out = []
    for n, st in enumerate(states, 1):
        row: dict[str, Any] = {"#action": st.pop("#action")}
        for k, v in st.items():
            row[k] = parse_value(v, f"{path}: state {n}: {k}")
        out.append(row)
    return out


_BACK = re.compile(r"^(?:State \d+: )?Back to state (\d+)")
_STUTTER = re.compile(r"^State (\d+): Stuttering")


def tlc_trace_loop(path: Path) -> int | None:
    """The loop of TLC's liveness counterexample in ``path`` (0-based, as ITF's ``loop``): ``Back to
    state k`` is k - 1; ``State n: Stuttering`` (the state before it stutters for ever) is n - 2.
    None for a trace without one (a safety counterexample)."""
    for ln in Path(path).read_text().splitlines():
        m = _BACK.match(ln.strip())
        if m:
            return int(m.group(1)) - 1
        m = _STUTTER.match(ln.strip())
        if m:
            return int(m.group(1)) - 2
    return None
