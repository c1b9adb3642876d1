"""Audit a finished run: its invariant suite again over the whole states table, plus table checks."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable

from .errors import UsageError, WarehouseError
from .expand import compile_model
from .invariants import InvariantSuite
from .model import load_model
from .session import declare_constants, get_spark

__all__ = ["audit_run", "find_run"]


def find_run(run: str, warehouse: Path) -> Path:
    p = Path(run)
    if (p / "run.json").is_file():
        return p.resolve()
    hits = sorted(Path(warehouse).glob(f"*/{run}/run.json"))
    if not hits:
        raise UsageError(f"no run '{run}' under {warehouse} (give the run id or the run's folder)")
    return hits[0].parent


def audit_run(run: str, warehouse: Path, *, models_root: Path | None = None, master: str | None = None) -> dict[str, Any]:
    root = find_run(run, warehouse)
    spec = json.loads((root / "run.json").read_text())
    model = load_model(spec["model"], models_root)
    states_path = root / "states"
    try:
        dt = DeltaTable(str(states_path))
    except Exception as exc:
        raise WarehouseError(f"{states_path}: not a readable Delta table ({exc})") from None
    checks: list[tuple[str, bool, str]] = []

    fps = pa.table(dt.to_pyarrow_table(columns=["_fp", "_fp2", "_depth"]))
    n = fps.num_rows
    distinct = pc.count_distinct(pc.binary_join_element_wise(
        pc.cast(fps["_fp"], pa.string()), pc.cast(fps["_fp2"], pa.string()), "/")).as_py()
    checks.append(("no state twice", distinct == n, f"{n:,} rows, {distinct:,} distinct fingerprints"))
    outcome_path = root / "outcome"
    if DeltaTable.is_deltatable(str(outcome_path)):
        out = DeltaTable(str(outcome_path)).to_pyarrow_table().to_pylist()[-1]
        checks.append(("row count matches the outcome", out["distinct_states"] == n,
                       f"outcome says {out['distinct_states']:,}, table holds {n:,}"))
    else:
        checks.append(("run finished", False, "no outcome table: the run did not finish"))

    spark = get_spark(master)
    declare_constants(spark, model, spec["constants"])
    cm = compile_model(spark, model)
    suite = InvariantSuite(spark, model.name, cm.invariant_exprs, spec["invariants"],
                           {k: str(f.path) for k, f in model.invariants.items()})
    df = spark.read.parquet(*dt.file_uris())
    in_model = " AND ".join(cm.constraint_exprs[c] for c in spec.get("constraints", [])) or "true"
    report = suite.validate(suite.with_columns(df.where(in_model)), result_format="SUMMARY")
    failed = set(report.failed)
    for name in spec["invariants"]:
        bad = report.unexpected.get(name, 0)
        checks.append((f"invariant {name}", name not in failed,
                       "holds in every state" if name not in failed else f"violated by {bad:,} states"))
    return {"run_id": spec["run_id"], "model": model.name, "states": n,
            "success": all(ok for _, ok, _ in checks), "checks": checks}
