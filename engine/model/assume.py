"""A model's ASSUME clauses: boolean SQL over the constants, checked before a run writes anything."""
from __future__ import annotations

from typing import Any

from pyspark.errors import PySparkException
from pyspark.sql import SparkSession
from pyspark.sql.types import BooleanType

from engine.errors import ModelError, UsageError
from engine.model.loader import Model
from engine.model.values import format_constant

__all__ = ["check_assumptions"]


def check_assumptions(spark: SparkSession, model: Model, constants: dict[str, Any]) -> None:
    """Raise UsageError naming the file when the constants (already declared as SQL variables) break an ASSUME."""
    for name, f in model.assumptions.items():
        body = f.text.strip().rstrip(";")
        try:
            df = spark.sql(f"SELECT ({body}\n) AS v")
        except PySparkException as exc:
            first = str(exc).strip().splitlines()[0]
            raise ModelError(f"{f.path}: {first}") from None
        if not isinstance(df.schema.fields[0].dataType, BooleanType):
            raise ModelError(f"{f.path}: an assumption is a boolean SQL expression over the constants")
        if df.collect()[0]["v"] is not True:
            shown = ", ".join(f"{k}={format_constant(v)}" for k, v in constants.items())
            raise UsageError(f"the constants break the model's ASSUME {name} ({f.path}): {shown}")
