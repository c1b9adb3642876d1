"""A run's outcome: what ``check`` returns, the row the outcome table stores, and the counterexample
written as ITF beside the run's tables."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.model.loader import RunSpec
from engine.search.encoding import fingerprint_note
from engine.store.runs import RunStore
from engine.traces.itf import parse_shape, write_itf
from engine.version import __version__

__all__ = ["Outcome", "outcome_row", "outcome_from_row", "public_trace", "run_spec_json", "write_trace_itf"]


@dataclass
class Outcome:
    model: str
    config: str
    constants: dict[str, Any]
    invariants: list[str]
    deadlock_check: bool
    result: str                        # ok | invariant_violated | deadlock
    violated_invariant: str | None
    distinct_states: int
    states_generated: int
    depth: int
    trace: list[dict[str, Any]]
    run_id: str
    tables: dict[str, str]
    seconds: float
    fingerprint: str = ""
    resumed_from_depth: int = 0
    from_cache: bool = False
    spark_startup_seconds: float = 0.0
    level_seconds: list[float] = field(default_factory=list)
    # name -> {"count": terminal states where it holds, "trace": a shortest path to the first one}
    terminal_findings: dict[str, dict[str, Any]] = field(default_factory=dict)
    symmetry: bool = False
    # action -> successors it generated over the whole search, duplicates included (TLC's "found")
    actions_generated: dict[str, int] = field(default_factory=dict)
    # which implementation of the search ran: "portable" (public Spark APIs) or "accelerated" (local mode)
    path: str = ""
    # Liveness (engine.search.liveness): each property checked, by name (PropertyResult); the first
    # violated one, whose lasso is ``trace`` with its loop (the index of the state the cycle returns
    # to, the last state's for stuttering) and the action closing the cycle (None: stuttering).
    properties: dict[str, Any] = field(default_factory=dict)
    fairness: list[str] = field(default_factory=list)
    violated_property: str | None = None
    loop: int | None = None
    loop_action: str | None = None
    search_seconds: float | None = None
    liveness_seconds: float | None = None
    edges: tuple[int, int] | None = None   # the edges table's (rows, bytes)

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model, "config": self.config, "constants": self.constants,
            "invariants": self.invariants, "deadlock_check": self.deadlock_check,
            "result": self.result, "violated_invariant": self.violated_invariant, "path": self.path,
            "distinct_states": self.distinct_states, "states_generated": self.states_generated,
            "depth": self.depth, "trace": public_trace(self.trace), "run_id": self.run_id, "tables": self.tables,
            "seconds": round(self.seconds, 3), "fingerprint": self.fingerprint,
            "resumed_from_depth": self.resumed_from_depth, "from_cache": self.from_cache,
            "terminal_findings": {n: {"count": f["count"], "trace": public_trace(f["trace"])}
                                  for n, f in self.terminal_findings.items()},
            "symmetry": self.symmetry, "actions_generated": self.actions_generated,
            **({"properties": {n: r.to_json() for n, r in self.properties.items()}, "fairness": self.fairness,
                "violated_property": self.violated_property, "loop": self.loop, "loop_action": self.loop_action,
                "search_seconds": round(self.search_seconds or 0.0, 3),
                "liveness_seconds": round(self.liveness_seconds or 0.0, 3),
                "edges": {"rows": self.edges[0], "bytes": self.edges[1]} if self.edges else None}
               if self.properties else {}),
        }


def write_trace_itf(path: Path, trace: list[dict[str, Any]], schema, spec: RunSpec, loop: int | None = None,
                    loop_action: str | None = None, property_: str | None = None) -> Path:
    """The counterexample as an ITF file (Apalache/Quint's trace format) beside the run's tables; a
    lasso with its loop index (the state the last one steps back to; the last state itself when it
    stutters for ever)."""
    shapes = {v.name: parse_shape(v.itf, f"{spec.model.schema_path}: variable {v.name}")
              for v in spec.model.variables if v.itf}
    meta = {"source": spec.model.source.get("module", spec.model.name), "model": spec.model.name,
            "config": spec.config, "constants": spec.constants, "invariants": spec.invariants,
            "run_id": spec.run_id, "description": "counterexample found by the relational state-space engine"}
    if property_ is not None:
        meta.update({"property": property_, "fairness": spec.fairness})
        if loop is not None:
            meta["loop_action"] = loop_action  # None: the last state stutters for ever
    return write_itf(path, trace, schema, shapes, meta, spec.constants, loop=loop)


def public_trace(trace: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"action": t["action"], "state": t["state"]} for t in trace]


def run_spec_json(spec: RunSpec) -> dict[str, Any]:
    return {"run_id": spec.run_id, "model": spec.model.name, "config": spec.config,
            "constants": spec.constants, "invariants": spec.invariants, "constraints": spec.constraints,
            "deadlock": spec.deadlock, "model_digest": spec.model.digest, "symmetry": spec.symmetry,
            "fingerprint": spec.fingerprint, "engine": __version__,
            **spec.extra}


def outcome_row(o: Outcome) -> dict[str, Any]:
    return {
        "run_id": o.run_id, "model": o.model, "config": o.config,
        "constants": json.dumps(o.constants, sort_keys=True), "invariants": json.dumps(o.invariants),
        "deadlock_check": o.deadlock_check, "result": o.result, "violated_invariant": o.violated_invariant,
        "distinct_states": o.distinct_states, "states_generated": o.states_generated, "depth": o.depth,
        "trace_length": len(o.trace), "trace": json.dumps(public_trace(o.trace)), "seconds": o.seconds,
        "fingerprint": o.fingerprint, "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "actions_generated": json.dumps(o.actions_generated),
    }


def outcome_from_row(spec: RunSpec, row: dict[str, Any], store: RunStore, seconds: float) -> Outcome:
    return Outcome(
        model=row["model"], config=row["config"], constants=json.loads(row["constants"]),
        invariants=json.loads(row["invariants"]), deadlock_check=row["deadlock_check"], result=row["result"],
        violated_invariant=row["violated_invariant"], distinct_states=row["distinct_states"],
        states_generated=row["states_generated"], depth=row["depth"], trace=json.loads(row["trace"]),
        run_id=row["run_id"], tables=store.tables(), seconds=seconds, from_cache=True,
        fingerprint=row.get("fingerprint") or fingerprint_note(spec.fingerprint), symmetry=spec.symmetry,
        actions_generated=json.loads(row.get("actions_generated") or "{}"),
    )
