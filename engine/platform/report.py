"""``python -m engine report RUN``: one self-contained HTML file a person reads after a run.

It needs no Spark: the run's small tables (outcome, levels) and two columns of the states table
(``_depth``, ``_action``) are read with delta-rs. Sections, each with an id a test can find:
``constants``, ``outcome``, ``levels-plot`` (an inline SVG of new states per level), ``actions``
(TLC-style coverage: the successors each action generated and the distinct states it found first),
``invariants`` and ``trace`` (changed values highlighted).
"""
from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable

from engine.platform.audit import find_run
from engine.model.values import format_constant, format_value
from engine.store.runs import sum_counts

__all__ = ["write_report", "render_report"]

CSS = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:.2em .6em;text-align:left;vertical-align:top}
th{background:#f3f3f3}.num{text-align:right}.changed{background:#ffe08a;font-weight:bold}
.ok{color:#17702b;font-weight:bold}.bad{color:#b00020;font-weight:bold}.note{color:#666;font-size:.9em}
code{font-family:ui-monospace,monospace}
"""


def _e(v: Any) -> str:
    return html.escape(str(v))


def _table(head: list[str], rows: list[list[str]], cls: list[str] | None = None, tid: str = "",
           cell_cls: list[list[str]] | None = None) -> str:
    """``cls``: one class per column; ``cell_cls``: one per cell (row by row), which overrides it."""
    cls = cls or [""] * len(head)
    out = [f'<table{f" id={chr(34)}{tid}{chr(34)}" if tid else ""}><thead><tr>'
           + "".join(f"<th>{_e(h)}</th>" for h in head) + "</tr></thead><tbody>"]
    for i, r in enumerate(rows):
        row_cls = cell_cls[i] if cell_cls else cls
        out.append("<tr>" + "".join(f'<td class="{c}">{v}</td>' for v, c in zip(r, row_cls)) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _svg_levels(levels: list[dict[str, Any]]) -> str:
    w, h, pad = 640, 240, 40
    n = max(len(levels), 1)
    top = max([lv["new_states"] for lv in levels] + [1])
    bw = (w - 2 * pad) / n
    bars = []
    for i, lv in enumerate(levels):
        bh = (h - 2 * pad) * lv["new_states"] / top
        x, y = pad + i * bw, h - pad - bh
        bars.append(f'<rect class="bar" x="{x:.1f}" y="{y:.1f}" width="{max(bw - 2, 1):.1f}" height="{bh:.1f}" '
                    f'fill="#4a78c2" data-depth="{lv["depth"]}" data-new="{lv["new_states"]}">'
                    f'<title>depth {lv["depth"]}: {lv["new_states"]:,} new states</title></rect>')
        if n <= 40 or i % max(n // 20, 1) == 0:
            bars.append(f'<text x="{x + bw / 2:.1f}" y="{h - pad + 14}" font-size="10" '
                        f'text-anchor="middle">{lv["depth"]}</text>')
    axes = (f'<line x1="{pad}" y1="{h - pad}" x2="{w - pad}" y2="{h - pad}" stroke="#333"/>'
            f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{h - pad}" stroke="#333"/>'
            f'<text x="{pad - 4}" y="{pad + 4}" font-size="10" text-anchor="end">{top:,}</text>'
            f'<text x="{w / 2}" y="{h - 6}" font-size="11" text-anchor="middle">depth (level)</text>'
            f'<text x="12" y="{h / 2}" font-size="11" transform="rotate(-90 12 {h / 2})" '
            f'text-anchor="middle">new states</text>')
    return (f'<svg id="levels-svg" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
            f'viewBox="0 0 {w} {h}" role="img" aria-label="new states per level">{axes}{"".join(bars)}</svg>')


def _read(path: Path) -> list[dict[str, Any]]:
    return DeltaTable(str(path)).to_pyarrow_table().to_pylist() if DeltaTable.is_deltatable(str(path)) else []


def _actions_generated(root: Path, outcome: dict[str, Any] | None, run_id: str) -> dict[str, int]:
    """Successors per action over the run: the outcome's sum, or (unfinished run) the commits' figures."""
    if outcome is not None and outcome.get("actions_generated"):
        return json.loads(outcome["actions_generated"])
    commits = sorted(DeltaTable(str(root / "states")).history(), key=lambda c: c.get("version", 0))
    return sum_counts(json.loads(c["actions_generated"]) for c in commits
                      if c.get("run_id") == run_id and c.get("actions_generated"))


def render_report(root: Path, models_root: Path | None = None) -> str:
    spec = json.loads((root / "run.json").read_text())
    shapes = _shapes(spec["model"], models_root)
    outcome = (_read(root / "outcome") or [None])[-1]
    levels = sorted(_read(root / "levels"), key=lambda r: r["depth"])
    states = pa.table(DeltaTable(str(root / "states")).to_pyarrow_table(columns=["_depth", "_action"]))
    per_action = (states.group_by("_action").aggregate([("_depth", "count")]).to_pylist()
                  if states.num_rows else [])
    title = f"{spec['model']} / {spec['config']}: run {spec['run_id']}"
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{_e(title)}</title>"
             f"<style>{CSS}</style></head><body><h1>{_e(title)}</h1>"]

    parts.append('<section id="constants"><h2>Constants</h2>' + _table(
        ["constant", "value"], [[f"<code>{_e(k)}</code>", _e(format_constant(v))] for k, v in spec["constants"].items()])
        + f"<p>Invariants checked: {_e(', '.join(spec['invariants']) or 'none')}; state constraints: "
        f"{_e(', '.join(spec.get('constraints', [])) or 'none')}; deadlock checking "
        f"{'on' if spec.get('deadlock', True) else 'off'}.</p></section>")

    if outcome is None:
        parts.append('<section id="outcome"><h2>Outcome</h2><p class="bad" id="result">unfinished: the run has '
                     'no outcome table yet (it is running, or was killed; start it again to resume)</p></section>')
        result = None
    else:
        result = outcome["result"]
        label = {"ok": "No error has been found.", "invariant_violated":
                 f"Invariant {outcome['violated_invariant']} is violated.", "deadlock": "Deadlock reached."}[result]
        parts.append('<section id="outcome"><h2>Outcome</h2>'
                     f'<p id="result" class="{"ok" if result == "ok" else "bad"}" data-result="{_e(result)}">'
                     f'{_e(label)}</p>' + _table(["figure", "value"], [
                         ["distinct states", f'<span id="distinct">{outcome["distinct_states"]:,}</span>'],
                         ["states generated", f'{outcome["states_generated"]:,}'],
                         ["depth", f'<span id="depth">{outcome["depth"]}</span>'],
                         ["seconds", f'{outcome["seconds"]:.1f}'],
                         ["finished at", _e(outcome["finished_at"])],
                         ["fingerprints", _e(outcome["fingerprint"])]], ["", "num"]) + "</section>")

    parts.append('<section id="levels-plot"><h2>New states per level</h2>' + _svg_levels(levels) + _table(
        ["depth", "generated", "new", "outside constraint", "distinct so far", "seconds"],
        [[str(lv["depth"]), f'{lv["generated"]:,}', f'{lv["new_states"]:,}', f'{lv["out_of_constraint"]:,}',
          f'{lv["distinct_total"]:,}', f'{lv["seconds"]:.2f}'] for lv in levels],
        ["num"] * 6, tid="levels-table") + "</section>")

    distinct = {r["_action"]: r["_depth_count"] for r in per_action}
    generated = _actions_generated(root, outcome, spec["run_id"])
    names = list(generated) + [a for a in distinct if a not in generated]
    total = sum(distinct.values()) or 1
    parts.append('<section id="actions"><h2>Actions</h2>' + _table(
        ["action", "successors generated", "distinct states it found first", "share of distinct"],
        [[f"<code>{_e(a)}</code>", f"{generated[a]:,}" if a in generated else "not recorded",
          f"{distinct.get(a, 0):,}", f"{100 * distinct.get(a, 0) / total:.1f}%"] for a in names],
        ["", "num", "num", "num"], tid="actions-table")
        + '<p class="note">As TLC\'s coverage: <em>generated</em> counts every successor the action produced, '
        'duplicates included (TLC\'s "found"; for <code>Init</code>, the initial states), recorded per level in '
        'the states table\'s commit metadata (<code>actions_generated</code>) and summed in the outcome table; '
        '<em>distinct</em> counts the states table\'s rows by <code>_action</code>: each state is credited to the '
        'action by which the search first met it. An action that generated nothing is listed with 0.</p></section>')

    inv_rows = []
    for name in spec["invariants"]:
        if result is None:
            status, cls = "not known: the run did not finish", ""
        elif outcome["violated_invariant"] == name:
            status, cls = f"violated at depth {outcome['depth']}", "bad"
        elif result == "ok":
            status, cls = "holds in every reachable state", "ok"
        else:
            status, cls = f"holds in every state up to depth {outcome['depth']} (the search stopped there)", "ok"
        inv_rows.append([f"<code>{_e(name)}</code>", f'<span class="{cls}">{_e(status)}</span>'])
    parts.append('<section id="invariants"><h2>Invariants</h2>' + _table(["invariant", "result"], inv_rows,
                 tid="invariants-table") + '<p class="note">Checked level by level with the model\'s Great '
                 'Expectations suite; <code>python -m engine audit</code> runs it again over the whole table.'
                 '</p></section>')

    trace = json.loads(outcome["trace"]) if outcome else []
    if trace:
        names = list(trace[0]["state"])
        rows, classes, prev = [], [], None
        for i, step in enumerate(trace, 1):
            cells = [str(i), f"<code>{_e(step['action'])}</code>"]
            cls = ["num", ""]
            for v in names:
                val = step["state"][v]
                cells.append(_e(format_value(val, shapes.get(v), spec["constants"])))
                cls.append("changed" if prev is not None and prev[v] != val else "")
            rows.append(cells)
            classes.append(cls)
            prev = step["state"]
        parts.append('<section id="trace"><h2>Counterexample</h2>' + _table(
            ["step", "action", *names], rows, tid="trace-table", cell_cls=classes)
            + '<p class="note">Highlighted: the values the step changed.</p></section>')
    else:
        parts.append('<section id="trace"><h2>Counterexample</h2><p>None: no invariant was violated and no '
                     'deadlock was found.</p></section>')
    parts.append("</body></html>")
    return "".join(parts)


def _shapes(model: str, models_root: Path | None) -> dict:
    """The model's variables' value shapes, or none when the model cannot be loaded here (the report
    then writes arrays as sequences)."""
    from engine.errors import EngineError
    from engine.model.loader import load_model, variable_shapes
    try:
        return variable_shapes(load_model(model, models_root))
    except EngineError:
        return {}


def write_report(run: str, warehouse: Path, out: Path | None = None, models_root: Path | None = None) -> Path:
    root = find_run(run, warehouse)
    if not DeltaTable.is_deltatable(str(root / "states")):
        from engine.errors import WarehouseError
        raise WarehouseError(f"{root / 'states'}: not a Delta table; nothing to report")
    text = render_report(root, models_root)
    out = Path(out) if out else root / "report.html"
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(out)  # nothing half-written
    return out
