"""Invariants as a Great Expectations suite.

Each invariant is a boolean SQL expression over one state (a TLA+ state predicate). For a batch of
states the engine adds one column per invariant, ``_inv_<Name>``, and the suite holds one
``ExpectColumnValuesToBeInSet([True])`` per invariant. Expectations over the same batch are bundled
by GX into a single aggregation, so a level costs one validation pass however many invariants the
model has: over a Spark DataFrame for a large level, over a pandas DataFrame of the invariant
columns for a small level the search holds on the driver. The same suite validates a finished
run's whole table (``engine audit``).
"""
from __future__ import annotations

import importlib
import logging
import os
import sys
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyspark.sql import DataFrame, SparkSession

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["InvariantSuite", "ValidationReport", "preload"]

_preloading: threading.Thread | None = None


def preload() -> None:
    """Start importing Great Expectations in a background thread (a slow import), to overlap
    with Spark's start-up and the model's compilation, which wait on the JVM. The suite's own
    import then finds the module loaded, or waits for the import under way (Python's import lock)."""
    global _preloading
    if _preloading is None and "great_expectations" not in sys.modules:
        os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
        _preloading = threading.Thread(target=importlib.import_module, args=("great_expectations",),
                                       name="gx-import", daemon=True)
        _preloading.start()


@dataclass
class ValidationReport:
    success: bool
    failed: list[str]            # invariant names, in the configuration's order
    unexpected: dict[str, int]   # per invariant: how many states violate it (when GX reports it)
    rows: int


class InvariantSuite:
    def __init__(self, spark: SparkSession, model_name: str, exprs: dict[str, str], names: list[str],
                 files: dict[str, str] | None = None):
        self.spark = spark
        self.names = list(names)
        self.exprs = {n: exprs[n] for n in self.names}
        self._vd = None
        if not self.names:
            return
        os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
        logging.getLogger("great_expectations").setLevel(logging.ERROR)
        import great_expectations as gx
        from great_expectations.data_context.types.base import ProgressBarsConfig

        ctx = gx.get_context(mode="ephemeral")
        ctx.variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
        # persist=False: the engine caches the level itself; GX's default would cache every batch again.
        source = ctx.data_sources.add_spark(f"{model_name}_states", persist=False)
        asset = source.add_dataframe_asset("level")
        batch_def = asset.add_batch_definition_whole_dataframe("whole_level")
        suite = ctx.suites.add(gx.ExpectationSuite(name=f"{model_name}.invariants"))
        for n in self.names:
            suite.add_expectation(gx.expectations.ExpectColumnValuesToBeInSet(
                column=self.column(n), value_set=[True],
                description=f"invariant {n} holds in every state",
                meta={"invariant": n, "sql": self.exprs[n].strip(), "file": (files or {}).get(n, "")},
            ))
        self._vd = ctx.validation_definitions.add(
            gx.ValidationDefinition(name=f"{model_name}.invariants.level", data=batch_def, suite=suite))
        # A small level is validated where the search holds it, on the driver (engine.search.arrow_level):
        # the same suite over a pandas batch of its invariant columns, without a Spark job.
        local = ctx.data_sources.add_pandas(f"{model_name}_level_arrow")
        local_batch = local.add_dataframe_asset("level").add_batch_definition_whole_dataframe("whole_level")
        self._vd_local = ctx.validation_definitions.add(
            gx.ValidationDefinition(name=f"{model_name}.invariants.level_arrow", data=local_batch, suite=suite))

    @staticmethod
    def column(name: str) -> str:
        return f"_inv_{name}"

    def with_columns(self, df: DataFrame, unless: str | None = None) -> DataFrame:
        """``df`` plus one boolean column per invariant (an evaluation that yields NULL counts as false);
        NULL, and not evaluated, where the boolean column ``unless`` is true."""
        if not self.names:
            return df
        return df.selectExpr("*", *[f"{guarded(f'coalesce({self.exprs[n]}, false)', unless)} AS `{self.column(n)}`"
                                    for n in self.names])

    def validate(self, df_with_columns: DataFrame, result_format: str = "BOOLEAN_ONLY") -> ValidationReport:
        if self._vd is None:
            return ValidationReport(True, [], {}, -1)
        res = self._vd.run(batch_parameters={"dataframe": df_with_columns}, result_format=result_format)
        return self._report(res)

    def validate_arrow(self, table: "pa.Table") -> ValidationReport:
        """The suite over an Arrow table holding the invariant columns (collected to the driver)."""
        if self._vd is None:
            return ValidationReport(True, [], {}, -1)
        frame = table.select([self.column(n) for n in self.names]).to_pandas()
        res = self._vd_local.run(batch_parameters={"dataframe": frame}, result_format="BOOLEAN_ONLY")
        return self._report(res)

    def _report(self, res) -> ValidationReport:
        failed_cols = {r.expectation_config.kwargs["column"]: r for r in res.results if not r.success}
        failed = [n for n in self.names if self.column(n) in failed_cols]
        unexpected = {}
        for n in failed:
            count = (failed_cols[self.column(n)].result or {}).get("unexpected_count")
            if count is not None:
                unexpected[n] = int(count)
        return ValidationReport(bool(res.success), failed, unexpected, -1)


def guarded(expr: str, unless: str | None) -> str:
    """``expr``, or NULL where the boolean column ``unless`` is true (Spark's generated code evaluates
    a branch of ``IF`` only when it is taken)."""
    return expr if unless is None else f"IF(`{unless}`, NULL, {expr})"
