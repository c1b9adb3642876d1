"""Stage: invariants. Each new state's constraint and invariant columns, and their verdict from a Great
Expectations suite.

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

__all__ = ["Batches", "InvariantSuite", "ValidationReport", "annotate", "first_violation", "preload"]



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


def annotate(states: DataFrame, suite: InvariantSuite, in_model: str) -> DataFrame:
    """``states`` with ``_in_model`` (the state constraint: TLC neither stores nor explores a state
    outside it, but checks its invariants) and one ``_inv_<Name>`` column per invariant."""
    return suite.with_columns(states.selectExpr("*", f"({in_model}) AS _in_model"))


class Batches:
    """The suite's verdicts on a run's levels. A level whose invariant columns show a failure is
    validated at once (the search stops there); the others are validated in batches of consecutive
    levels held on the driver (a run of the suite has a fixed cost whatever its rows), a level left
    in Spark on its own, and every batch before the run reports its result. The suite disagreeing
    with the columns it validates is an engine error, raised."""

    BATCH_ROWS = 50_000
    BATCH_LEVELS = 8

    def __init__(self, suite: InvariantSuite):
        self.suite = suite
        self.pending: list[tuple[int, "pa.Table"]] = []

    def now(self, level) -> ValidationReport:
        """The suite's verdict on ``level`` (an Arrow table or a Spark DataFrame of the new states)."""
        if not self.suite.names:
            return ValidationReport(True, [], {}, -1)
        columns = [self.suite.column(n) for n in self.suite.names]
        if isinstance(level, DataFrame):
            return self.suite.validate(level.select(*columns))
        return self.suite.validate_arrow(level.select(columns))

    def later(self, level, depth: int) -> None:
        """Validate ``level`` (every invariant column true) with the next batch."""
        if not self.suite.names:
            return
        if isinstance(level, DataFrame):
            self._check(self.now(level), [depth])
            return
        self.pending.append((depth, level.select([self.suite.column(n) for n in self.suite.names])))
        if sum(t.num_rows for _, t in self.pending) >= self.BATCH_ROWS or len(self.pending) >= self.BATCH_LEVELS:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        import pyarrow as pa
        batch, self.pending = self.pending, []
        self._check(self.suite.validate_arrow(pa.concat_tables([t for _, t in batch])), [d for d, _ in batch])

    @staticmethod
    def _check(report: ValidationReport, depths: list[int]) -> None:
        if not report.success:
            raise RuntimeError(f"the invariant suite failed {report.failed} at depths {depths[0]}..{depths[-1]}, "
                               "whose invariant columns all held: report it")


def first_violation(level, failed: list[str], order: list[str]) -> tuple[dict, str]:
    """The first state of the level (in TLC's order, ``_ord``) that breaks one of ``failed``, and the
    invariant TLC names: the first of the configuration's ``order`` it breaks. ``level``: an Arrow
    table in TLC's order, or a Spark DataFrame."""
    if isinstance(level, DataFrame):
        cond = " OR ".join(f"NOT `{InvariantSuite.column(n)}`" for n in failed)
        row = level.where(cond).orderBy("_ord").limit(1).collect()[0].asDict(recursive=True)
    else:
        import pyarrow.compute as pc
        bad = None
        for n in failed:
            breaks = pc.invert(pc.fill_null(level[InvariantSuite.column(n)], False))
            bad = breaks if bad is None else pc.or_(bad, breaks)
        row = level.filter(bad).slice(0, 1).to_pylist()[0]
    return row, next(n for n in order if row.get(InvariantSuite.column(n)) is False)
