"""Counterexamples rebuilt from the states table by following parent fingerprints."""
from __future__ import annotations

from typing import Any

import pyarrow as pa

from engine.store.runs import RunStore

__all__ = ["build_trace", "trace_table_rows", "trace_arrow_schema"]


def build_trace(store: RunStore, last: dict[str, Any], variables: list[str]) -> list[dict[str, Any]]:
    """States from an initial state to ``last``, each with the action that produced it."""
    chain = [last]
    cur = last
    while cur.get("_parent_fp") is not None:
        cur = store.find_state(int(cur["_depth"]) - 1, cur["_parent_fp"], cur["_parent_fp2"])
        chain.append(cur)
    chain.reverse()
    return [{"action": s["_action"], "fingerprint": [s["_fp"], s["_fp2"]],
             "state": {v: s[v] for v in variables}} for s in chain]


def trace_arrow_schema(states_schema: pa.Schema, variables: list[str]) -> pa.Schema:
    fields = [pa.field("run_id", pa.string()), pa.field("step", pa.int32()), pa.field("action", pa.string()),
              pa.field("_fp", pa.int64()), pa.field("_fp2", pa.int64())]
    fields += [states_schema.field(v) for v in variables]
    return pa.schema(fields)


def trace_table_rows(trace: list[dict[str, Any]], run_id: str) -> list[dict[str, Any]]:
    return [{"run_id": run_id, "step": i + 1, "action": t["action"], "_fp": t["fingerprint"][0],
             "_fp2": t["fingerprint"][1], **t["state"]} for i, t in enumerate(trace)]
