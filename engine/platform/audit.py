"""Audit a finished run: its invariant suite again over the whole states table, plus table checks.

Each check is (name, passed, detail). The table checks are queries that return the offending rows
(empty means pass): the detail names the first few of them, so a failure says what is wrong.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from deltalake import DeltaTable

from engine.store.deltaio import read_delta
from engine.errors import UsageError, WarehouseError
from engine.search.expand import compile_model
from engine.search.invariants import InvariantSuite
from engine.model.loader import load_model
from engine.runtime.session import declare_constants, get_spark
from engine.settings import Settings
from engine.store.runs import states_spark_schema

__all__ = ["audit_run", "find_run"]

LEVEL_KEYS = ("depth", "generated", "new_states", "out_of_constraint", "distinct_total", "generated_total")
SHOW = 3  # offending rows named in a failed check's detail


def find_run(run: str, warehouse: Path) -> Path:
    p = Path(run)
    if (p / "run.json").is_file():
        return p.resolve()
    hits = sorted(Path(warehouse).glob(f"*/{run}/run.json"))
    if not hits:
        raise UsageError(f"no run '{run}' under {warehouse} (give the run id or the run's folder)")
    return hits[0].parent


def _history_checks(dt: DeltaTable, run_id: str, per_depth: dict[int, int]) -> list[tuple[str, bool, str]]:
    """One commit per level, in order, each carrying its level's figures; the figures match the rows."""
    commits = sorted(dt.history(), key=lambda c: c["version"])
    problems: list[str] = []
    levels: dict[int, dict[str, Any]] = {}
    for c in commits:
        if c.get("operation") == "CREATE TABLE" and c["version"] == 0:
            continue
        if c.get("run_id") != run_id or not all(k in c for k in LEVEL_KEYS):
            problems.append(f"commit {c['version']} ({c.get('operation')}) is not a level commit of run {run_id} "
                            f"(no level figures in its metadata)")
            continue
        d = int(c["depth"])
        if d in levels:
            problems.append(f"depth {d} committed twice (versions {levels[d]['version']} and {c['version']})")
            continue
        levels[d] = c
    depths = sorted(levels)
    if depths != list(range(1, len(depths) + 1)):
        problems.append(f"committed depths {depths} are not 1..{len(depths)} in order")
    distinct = generated = 0
    for d in depths:
        c = levels[d]
        new, gen = int(c["new_states"]), int(c["generated"])
        distinct, generated = distinct + new, generated + gen
        if per_depth.get(d, 0) != new:
            problems.append(f"depth {d}: commit {c['version']} says {new:,} new states, "
                            f"the table holds {per_depth.get(d, 0):,}")
        if int(c["distinct_total"]) != distinct or int(c["generated_total"]) != generated:
            problems.append(f"depth {d}: running totals {c['distinct_total']}/{c['generated_total']} "
                            f"(distinct/generated) differ from the sum of the levels, {distinct}/{generated}")
    for d in sorted(set(per_depth) - set(levels)):
        problems.append(f"{per_depth[d]:,} states at depth {d}, which no commit records")
    ok = not problems
    detail = (f"{len(depths)} level commits, depths 1..{len(depths)}, figures match the rows" if ok
              else "; ".join(problems[:SHOW]) + (f"; and {len(problems) - SHOW} more" if len(problems) > SHOW else ""))
    return [("one commit per level with its figures", ok, detail)]


def _listed_files(dt: DeltaTable) -> list[str]:
    """The data files the table's log lists, relative to the table."""
    import pyarrow as pa
    return sorted(pa.table(dt.get_add_actions(flatten=True)).column("path").to_pylist())


def _missing_files(dt: DeltaTable, states_path: Path) -> list[tuple[int, str]]:
    """(depth, path) of each data file the table's log lists that is not on disk."""
    out = []
    for rel in _listed_files(dt):
        if not (states_path / rel).is_file():
            head = rel.split("/", 1)[0]
            depth = int(head.split("-")[1]) if head.startswith("depth-") else -1
            out.append((depth, str(states_path / rel)))
    return out


def audit_run(run: str, warehouse: Path, *, models_root: Path | None = None,
              settings: Settings | None = None) -> dict[str, Any]:
    root = find_run(run, warehouse)
    spec = json.loads((root / "run.json").read_text())
    model = load_model(spec["model"], models_root)
    states_path = root / "states"
    try:
        dt = DeltaTable(str(states_path))
    except Exception as exc:
        raise WarehouseError(f"{states_path}: not a readable Delta table ({exc})") from None
    checks: list[tuple[str, bool, str]] = []
    missing = _missing_files(dt, states_path)
    if missing:
        named = "; ".join(f"depth {d}: {path}" for d, path in missing[:SHOW])
        more = f"; and {len(missing) - SHOW} more" if len(missing) > SHOW else ""
        checks.append(("every data file the log lists is there", False,
                       f"{len(missing):,} missing: {named}{more} (the other checks read the table: not run)"))
        return {"run_id": spec["run_id"], "model": model.name, "states": None, "table": str(states_path),
                "success": False, "checks": checks}
    checks.append(("every data file the log lists is there", True, f"{len(_listed_files(dt)):,} files"))

    settings = settings or Settings()
    spark = get_spark(settings)
    declare_constants(spark, model, spec["constants"])
    cm = compile_model(spark, model, settings.planning_threads)
    df = read_delta(spark, str(states_path), states_spark_schema(cm.schema), settings)
    df.createOrReplaceTempView("_audit_states")
    n = df.count()
    per_depth = {r["_depth"]: r["n"] for r in spark.sql(
        "SELECT _depth, count(*) AS n FROM _audit_states GROUP BY _depth").collect()}

    dups = spark.sql("""SELECT _fp, _fp2, count(*) AS n, sort_array(collect_list(_depth)) AS depths
                        FROM _audit_states GROUP BY _fp, _fp2 HAVING count(*) > 1
                        ORDER BY depths[0], _fp, _fp2""")
    n_dup = dups.count()
    if n_dup == 0:
        checks.append(("no state twice", True, f"{n:,} rows, {n:,} distinct fingerprints"))
    else:
        named = ", ".join(f"{r['_fp']}/{r['_fp2']} ({r['n']} rows, depths {list(r['depths'])})"
                          for r in dups.limit(SHOW).collect())
        checks.append(("no state twice", False, f"{n_dup:,} fingerprints appear more than once: {named}"))

    orphans = spark.sql("""
        SELECT s._fp, s._fp2, s._depth, s._parent_fp, s._parent_fp2 FROM _audit_states s
        LEFT ANTI JOIN _audit_states p
          ON p._fp = s._parent_fp AND p._fp2 = s._parent_fp2 AND p._depth = s._depth - 1
        WHERE s._depth > 1 OR s._parent_fp IS NOT NULL
        ORDER BY s._depth, s._ord""")
    n_orphan = orphans.count()
    if n_orphan == 0:
        checks.append(("every state's parent is at the previous depth", True,
                       f"{n - per_depth.get(1, 0):,} non-initial states, all parents found"))
    else:
        named = ", ".join(f"state {r['_fp']}/{r['_fp2']} at depth {r['_depth']} (parent "
                          f"{r['_parent_fp']}/{r['_parent_fp2']} not at depth {r['_depth'] - 1})"
                          for r in orphans.limit(SHOW).collect())
        checks.append(("every state's parent is at the previous depth", False,
                       f"{n_orphan:,} states without their parent: {named}"))

    checks += _history_checks(dt, spec["run_id"], per_depth)

    outcome_path = root / "outcome"
    if DeltaTable.is_deltatable(str(outcome_path)):
        out = DeltaTable(str(outcome_path)).to_pyarrow_table().to_pylist()[-1]
        checks.append(("row count matches the outcome", out["distinct_states"] == n,
                       f"outcome says {out['distinct_states']:,}, table holds {n:,}"))
    else:
        checks.append(("run finished", False, "no outcome table: the run did not finish"))

    suite = InvariantSuite(spark, model.name, cm.invariant_exprs, spec["invariants"],
                           {k: str(f.path) for k, f in model.invariants.items()})
    in_model = " AND ".join(cm.constraint_exprs[c] for c in spec.get("constraints", [])) or "true"
    report = suite.validate(suite.with_columns(df.where(in_model)), result_format="SUMMARY")
    failed = set(report.failed)
    for name in spec["invariants"]:
        bad = report.unexpected.get(name, 0)
        checks.append((f"invariant {name}", name not in failed,
                       "holds in every state" if name not in failed else f"violated by {bad:,} states"))
    return {"run_id": spec["run_id"], "model": model.name, "states": n, "table": str(states_path),
            "success": all(ok for _, ok, _ in checks), "checks": checks}
