"""Replay a stored trace against a model: is every step a legal transition?

A trace is an ITF file (written by this engine, or converted from TLC or Apalache), a TLC error trace
as TLC prints it (``--tlc``), or a finished run (its ``trace`` table). The first state must be one of
the model's initial states and each next state a successor of the one before by some action of
``Next`` (a step that changes nothing is a stuttering step, which TLA+ always allows). The
configuration's invariants (or the trace's own, or ``--invariant``) are evaluated on every state too, so a counterexample replays as "legal, and breaks X at step n". All
steps are checked in one Spark job: the trace is the frontier, every action runs over it, and each
step's next state is looked up among its successors by fingerprint.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField, StructType

from engine.model.assume import check_assumptions
from engine.errors import UsageError
from engine.search.expand import compile_model
from engine.search.encoding import JSON, fingerprint_sql
from engine.traces.itf import ANY, from_itf, parse_shape, read_itf
from engine.model.loader import RunSpec
from engine.runtime.session import declare_constants

__all__ = ["StepResult", "ReplayReport", "load_trace", "replay"]


@dataclass
class StepResult:
    step: int                       # 1-based, as TLC numbers states
    label: str                      # the action the trace names, if any
    legal: bool
    actions: list[str]              # the model's actions that produce this state from the one before
    failed_invariants: list[str]
    detail: str = ""


@dataclass
class ReplayReport:
    model: str
    constants: dict[str, Any]
    steps: list[StepResult] = field(default_factory=list)
    # A lasso's loop (0-based): its last step, the one closing the cycle, is checked like the others.
    loop: int | None = None

    @property
    def legal(self) -> bool:
        return all(s.legal for s in self.steps)

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "constants": self.constants, "legal": self.legal,
                "length": len(self.steps) - (self.loop is not None), "loop": self.loop,
                "first_illegal_step": next((s.step for s in self.steps if not s.legal), None),
                "steps": [s.__dict__ for s in self.steps]}


def load_trace(spec: RunSpec, states: list[dict[str, Any]], source: str, schema: StructType) -> list[dict[str, Any]]:
    """Turn parsed trace states (itf-py values) into rows of the model's state schema."""
    shapes = {v.name: parse_shape(v.itf, f"{spec.model.schema_path}: variable {v.name}") if v.itf else ANY
              for v in spec.model.variables}
    rows = []
    for i, st in enumerate(states, 1):
        missing = [f.name for f in schema.fields if f.name not in st]
        if missing:
            raise UsageError(f"{source}: state {i} has no value for {missing} (model {spec.model.name} has "
                             f"{[f.name for f in schema.fields]})")
        extra = [k for k in st if k not in schema.fieldNames() and not k.startswith("#")]
        if extra:
            raise UsageError(f"{source}: state {i} has variables {extra} that model {spec.model.name} does not")
        row = {f.name: from_itf(st[f.name], f.dataType, shapes[f.name], spec.constants, f"{source}: state {i}: {f.name}")
               for f in schema.fields}
        row["#action"] = st.get("#action")
        rows.append(row)
    if not rows:
        raise UsageError(f"{source}: the trace has no states")
    return rows


def replay(spark: SparkSession, spec: RunSpec, rows: list[dict[str, Any]], loop: int | None = None) -> ReplayReport:
    """Replay ``rows``; a lasso (``loop``: the state the last one steps back to, the last one itself when
    it stutters for ever) gets one more step, from its last state back to state ``loop``, checked like
    the others (a stuttering step is always legal)."""
    if loop is not None:
        if not 0 <= loop < len(rows):
            raise UsageError(f"the trace's loop index {loop} is not one of its states (0..{len(rows) - 1})")
        back = dict(rows[loop])
        back["#action"] = "Stuttering" if loop == len(rows) - 1 else f"Back to state {loop + 1}"
        rows = [*rows, back]
    declare_constants(spark, spec.model, spec.constants)
    check_assumptions(spark, spec.model, spec.constants)
    cm = compile_model(spark, spec.model)
    schema = cm.schema
    names = [f.name for f in schema.fields]
    # Any scheme compares the trace's states with the successors of this one job: JSON needs no JVM helper.
    fp1, fp2 = fingerprint_sql([(f.name, f.dataType) for f in schema.fields], using=JSON)

    with_step = StructType([*schema.fields, StructField("_step", LongType())])
    trace_df = spark.createDataFrame([tuple(r[n] for n in names) + (i,) for i, r in enumerate(rows, 1)],
                                     with_step)
    trace_df = trace_df.selectExpr("*", f"{fp1} AS _fp", f"{fp2} AS _fp2").persist()
    fps = {r["_step"]: (r["_fp"], r["_fp2"]) for r in trace_df.select("_step", "_fp", "_fp2").collect()}

    inv_names = list(spec.invariants)
    inv_cols = [f"coalesce({cm.invariant_exprs[n]}, false) AS `{n}`" for n in inv_names]
    inv_rows = {r["_step"]: r for r in trace_df.selectExpr("_step", *inv_cols).collect()} if inv_cols else {}

    init = cm.init(spark).selectExpr(f"{fp1} AS _fp", f"{fp2} AS _fp2").collect()
    init_fps = {(r["_fp"], r["_fp2"]) for r in init}

    frontier = trace_df.selectExpr(*[f"`{n}`" for n in names],
                                   "named_struct('fp', _fp, 'fp2', _fp2, 'ord', _step) AS _parent")
    succ = (cm.successors(spark, frontier, view="sse_replay_trace")
            .selectExpr("_parent_ord AS _step", "_action", f"{fp1} AS _fp", f"{fp2} AS _fp2"))
    # Only the successors that equal the trace's next state matter: join on (step + 1)'s fingerprint.
    nxt = trace_df.select((F.col("_step") - 1).alias("_step"), "_fp", "_fp2")
    hits = succ.join(nxt, on=["_step", "_fp", "_fp2"], how="inner").select("_step", "_action").collect()
    by_step: dict[int, list[str]] = {}
    for h in hits:
        by_step.setdefault(int(h["_step"]) + 1, []).append(h["_action"])
    order = [f.name for f in spec.model.actions]

    report = ReplayReport(spec.model.name, spec.constants, loop=loop)
    for i, row in enumerate(rows, 1):
        failed = [n for n in inv_names if inv_rows and inv_rows[i][n] is not True]
        label = row.get("#action") or ("Init" if i == 1 else "")
        if i == 1:
            legal = fps[1] in init_fps
            detail = "" if legal else "not an initial state of the model for these constants"
            acts = ["Init"] if legal else []
        else:
            acts = sorted(set(by_step.get(i, [])), key=order.index)
            stutter = fps[i] == fps[i - 1]
            legal = bool(acts) or stutter
            if stutter and not acts:
                acts = ["(stuttering)"]
            detail = "" if legal else _closest(spark, cm, frontier, schema, rows, i)
        report.steps.append(StepResult(i, label, legal, acts, failed, detail))
    return report


def _closest(spark: SparkSession, cm, frontier, schema: StructType, rows: list[dict[str, Any]], i: int) -> str:
    """Say how the trace's state i differs from the nearest successor of state i - 1."""
    names = [f.name for f in schema.fields]
    succ = cm.successors(spark, frontier.where(f"_parent.ord = {i - 1}"), view="sse_replay_step").collect()
    want = rows[i - 1]
    if not succ:
        return f"no action of the model is enabled in state {i - 1}"
    best = None
    for s in succ:
        d = s.asDict(recursive=True)
        diff = [n for n in names if d[n] != want[n]]
        if best is None or len(diff) < len(best[1]):
            best = (d["_action"], diff)
    return (f"no action leads from state {i - 1} to state {i}; the nearest successor ({best[0]}) "
            f"differs in {', '.join(best[1])}")


def format_report(rep: ReplayReport) -> str:
    lines = []
    for s in rep.steps:
        mark = "ok " if s.legal else "BAD"
        label = f"<{s.label}>" if s.label else ""
        via = ", ".join(s.actions)
        inv = f"; violates {', '.join(s.failed_invariants)}" if s.failed_invariants else ""
        lines.append(f"[{mark}] state {s.step} {label} {('by ' + via) if via else ''}{inv}".rstrip())
        if s.detail:
            lines.append(f"      {s.detail}")
    verdict = "every step is a legal transition" if rep.legal else \
        f"state {next(s.step for s in rep.steps if not s.legal)} is not reachable from the state before it"
    n = len(rep.steps) - (rep.loop is not None)
    lasso = "" if rep.loop is None else (" (a lasso: the last state stutters for ever)" if rep.loop == n - 1 else
                                         f" (a lasso: the last step goes back to state {rep.loop + 1})")
    lines.append(f"Replay of {n} states{lasso} against {rep.model}: {verdict}.")
    return "\n".join(lines)


def resolve_replay(trace: str, root: Path, *, model: str | None, config: str | None, sets: list[str],
                   tlc: bool, warehouse: Path, invariants: list[str] | None = None
                   ) -> tuple[RunSpec, list[dict[str, Any]], str, int | None]:
    """The model and constants to replay against, the trace's states (itf-py or TLC values), where it
    came from, and its loop when it is a lasso (ITF's ``loop``; TLC's "Back to state" or "Stuttering")."""
    from engine.model.loader import coerce_constant, load_model, resolve_run
    from engine.traces.tlc_text import read_tlc_trace, tlc_trace_loop

    path = Path(trace)
    meta: dict[str, Any] = {}
    if tlc:
        if not model:
            raise UsageError("--tlc needs --model (a TLC trace does not name the model)")
        states = read_tlc_trace(path)
        meta["loop"] = tlc_trace_loop(path)
    else:
        if not path.is_file():
            from engine.platform.audit import find_run
            run_root = find_run(trace, warehouse)
            path = run_root / "trace.itf.json"
            if not path.is_file():
                raise UsageError(f"run {run_root.name} has no counterexample to replay ({path} does not exist)")
        meta, _vars, states = read_itf(path)
    name = model or meta.get("model")
    if not name:
        raise UsageError(f"{path}: the trace does not name its model; pass --model")
    m = load_model(name, root)
    if not invariants and not config and meta.get("invariants"):
        invariants = [i for i in meta["invariants"] if i in m.invariants]
    # (symmetry plays no part in a replay, and a configuration's liveness properties none either)
    spec = resolve_run(m, config or (meta.get("config") if meta.get("config") in m.configurations else None), sets,
                       invariants or None, symmetry=False)
    if meta.get("constants") and not config:
        given = {s.split("=", 1)[0].strip() for s in sets}
        for k, v in meta["constants"].items():
            if k not in m.constants:
                raise UsageError(f"{path}: constant {k} is not a constant of model {m.name}")
            if k not in given:
                spec.constants[k] = coerce_constant(m.constants[k], v)
    return spec, states, str(path), meta.get("loop")
