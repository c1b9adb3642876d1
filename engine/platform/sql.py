"""Ad-hoc Spark SQL over a finished (or running) run's tables: ``python -m engine sql RUN "SELECT ..."``.

The run's tables are temporary views named ``states``, ``levels``, ``outcome`` and (after a
violation or deadlock) ``trace``; the model's constants are SQL session variables under their TLA+
names, as in the model's own SQL, so ``SELECT count(*) FROM states WHERE size(Clients) > 2`` works.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from deltalake import DeltaTable
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from engine.platform.audit import find_run
from engine.store.deltaio import read_delta
from engine.errors import UsageError
from engine.model.loader import load_model, variable_shapes
from engine.model.values import format_value
from engine.runtime.session import declare_constants, get_spark
from engine.settings import Settings

__all__ = ["run_sql", "format_table", "VIEWS"]

VIEWS = ("states", "levels", "outcome", "trace")


def register_run(spark: SparkSession, root: Path, models_root: Path | None,
                 settings: Settings | None = None) -> dict[str, Any]:
    """Declare the run's constants and register its tables as views; returns the run's run.json."""
    spec = json.loads((root / "run.json").read_text())
    model = load_model(spec["model"], models_root)
    declare_constants(spark, model, spec["constants"])
    for name in VIEWS:
        path = root / name
        if DeltaTable.is_deltatable(str(path)):
            read_delta(spark, str(path), settings=settings).createOrReplaceTempView(name)
        else:
            spark.catalog.dropTempView(name)
    return spec


def run_sql(run: str, query: str, warehouse: Path, *, models_root: Path | None = None,
            settings: Settings | None = None, limit: int = 1000) -> dict[str, Any]:
    root = find_run(run, warehouse)
    spark = get_spark(settings)
    spec = register_run(spark, root, models_root, settings)
    # PySpark logs every failed query's stack as JSON on stderr; the error below says it in one line.
    logging.getLogger("SQLQueryContextLogger").setLevel(logging.CRITICAL)
    try:
        df = spark.sql(query)
        rows = [r.asDict(recursive=True) for r in df.limit(limit + 1).collect()]
    except PySparkException as exc:
        first = str(exc).strip().splitlines()[0]
        raise UsageError(f"query over run {spec['run_id']} failed: {first} "
                         f"(views: states, levels, outcome, trace; constants: "
                         f"{', '.join(spec['constants'])})") from None
    return {"run_id": spec["run_id"], "columns": df.columns, "rows": rows[:limit], "truncated": len(rows) > limit,
            "shapes": variable_shapes(load_model(spec["model"], models_root)), "constants": spec["constants"]}


def format_table(columns: list[str], rows: list[dict[str, Any]], shapes: dict | None = None,
                 constants: dict[str, Any] | None = None) -> str:
    """Rows as a text table; a column named after a state variable is written by its shape."""
    shapes = shapes or {}
    cells = [[format_value(r[c], shapes.get(c), constants) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    line = lambda vals: " | ".join(v.ljust(w) for v, w in zip(vals, widths)).rstrip()  # noqa: E731
    out = [line(columns), "-+-".join("-" * w for w in widths)]
    out += [line(row) for row in cells]
    out.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(out)
