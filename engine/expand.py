"""Expansion: the model's SQL files compiled into queries over the frontier.

Every action file is a query over the view ``frontier`` (the state variables plus ``_parent``, the
row's identity, which the action passes through). The engine checks each file once against an
empty frontier (so a syntax error or a wrong column names its file), then unions all actions into
one query that each level re-runs over the new frontier.
"""
from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pyarrow as pa

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import (
    ArrayType, BooleanType, DataType, NullType, NumericType, StructField, StructType,
    LongType, IntegerType,
)

from .errors import ModelError
from .model import Model, SqlFile

__all__ = ["CompiledModel", "FixedExpansion", "compile_model", "state_schema", "PARENT_TYPE"]

PARENT_TYPE = StructType([
    StructField("fp", LongType()), StructField("fp2", LongType()), StructField("ord", LongType()),
])
ACTION_BITS = 6
CHOICE_BITS = 14
MAX_CHOICE = (1 << CHOICE_BITS) - 1


def _clean(text: str) -> str:
    # Strip a trailing ';' and end with a newline so a final '--' comment cannot swallow what follows.
    body = text.strip()
    while body.endswith(";"):
        body = body[:-1].rstrip()
    return body + "\n"


def _spark_message(exc: Exception) -> str:
    msg = str(exc).strip()
    lines = [ln for ln in msg.splitlines() if ln.strip() and not ln.startswith("JVM stacktrace")]
    cut = []
    for ln in lines:
        if ln.startswith("\tat ") or ln.startswith("== SQL") or ln.strip().startswith("at "):
            break
        cut.append(ln)
    return "\n".join(cut[:8]) or msg


def state_schema(spark: SparkSession, model: Model) -> StructType:
    fields = []
    for v in model.variables:
        try:
            dtype = spark.createDataFrame([], f"`{v.name}` {v.type}").schema.fields[0].dataType
        except PySparkException as exc:
            raise ModelError(f"{model.schema_path}: variable {v.name}: {v.type!r} is not a Spark SQL type "
                             f"({_spark_message(exc)})") from None
        fields.append(StructField(v.name, dtype, True))
    return StructType(fields)


def _compatible(out: DataType, want: DataType, path: str) -> str | None:
    """Why ``out`` cannot stand for ``want`` (None if it can, casting where needed)."""
    if isinstance(out, NullType):
        return None
    if isinstance(want, StructType):
        if not isinstance(out, StructType):
            return f"{path} is {out.simpleString()}, declared {want.simpleString()}"
        got = [f.name for f in out.fields]
        exp = [f.name for f in want.fields]
        if got != exp:
            return f"{path} has fields {got}, declared {exp} (same names, same order)"
        for fo, fw in zip(out.fields, want.fields):
            why = _compatible(fo.dataType, fw.dataType, f"{path}.{fw.name}")
            if why:
                return why
        return None
    if isinstance(want, ArrayType):
        if not isinstance(out, ArrayType):
            return f"{path} is {out.simpleString()}, declared {want.simpleString()}"
        return _compatible(out.elementType, want.elementType, f"{path}[]")
    if isinstance(want, NumericType) and isinstance(out, NumericType):
        return None
    if type(out) is not type(want):
        return f"{path} is {out.simpleString()}, declared {want.simpleString()}"
    return None


@dataclass
class CompiledModel:
    model: Model
    schema: StructType
    init_sql: str
    successors_sql: str
    invariant_exprs: dict[str, str]
    constraint_exprs: dict[str, str]
    terminal_exprs: dict[str, str] = None  # type: ignore[assignment]

    @property
    def action_names(self) -> list[str]:
        """The actions in Next's order (the ``_action`` values successors carry)."""
        return [f.name for f in self.model.actions]

    def init(self, spark: SparkSession) -> DataFrame:
        return spark.sql(self.init_sql)

    def successors(self, spark: SparkSession, frontier: DataFrame) -> DataFrame:
        frontier.createOrReplaceTempView("frontier")
        return spark.sql(self.successors_sql)


def _analyze(spark: SparkSession, f: SqlFile, sql: str) -> StructType:
    try:
        return spark.sql(sql).schema
    except PySparkException as exc:
        raise ModelError(f"{f.path}: {_spark_message(exc)}") from None


def _check_outputs(model: Model, schema: StructType, f: SqlFile, out: StructType, parent: bool) -> bool:
    names = [x.name for x in out.fields]
    want = set(model.variable_names) | ({"_parent"} if parent else set())
    missing = [n for n in model.variable_names if n not in names]
    if parent and "_parent" not in names:
        missing.append("_parent")
    extra = [n for n in names if n not in want and n != "_choice"]
    if missing or extra or len(names) != len(set(names)):
        hint = "the final SELECT lists every state variable" + (", _parent" if parent else "") + \
               " and optionally _choice, and nothing else"
        raise ModelError(f"{f.path}: output columns {names}: missing {missing}, unexpected {extra}; {hint}")
    types = {x.name: x.dataType for x in out.fields}
    for field in schema.fields:
        why = _compatible(types[field.name], field.dataType, field.name)
        if why:
            raise ModelError(f"{f.path}: {why}")
    if "_choice" in types and not isinstance(types["_choice"], (IntegerType, LongType)):
        raise ModelError(f"{f.path}: _choice must be an integer (the witness's position in TLC's enumeration)")
    return "_choice" in types


def _define_functions(spark: SparkSession, model: Model) -> None:
    # Helper operators (TLA+ definitions, P helper functions): one SQL function per file, inlined
    # by Spark's optimizer into every query that calls it.
    for f in model.functions:
        body = _clean(f.text)
        if not re.match(r"^(--[^\n]*\n|\s)*CREATE\s+(OR\s+REPLACE\s+)?TEMPORARY\s+FUNCTION\s+" + f.name + r"\s*\(",
                        body, re.IGNORECASE):
            raise ModelError(f"{f.path}: a function file holds one statement "
                             f"'CREATE OR REPLACE TEMPORARY FUNCTION {f.name}(...) RETURNS ... RETURN ...'")
        try:
            spark.sql(body)
        except PySparkException as exc:
            raise ModelError(f"{f.path}: {_spark_message(exc)}") from None


def compile_model(spark: SparkSession, model: Model) -> CompiledModel:
    _define_functions(spark, model)
    schema = state_schema(spark, model)
    empty = spark.createDataFrame([], StructType([*schema.fields, StructField("_parent", PARENT_TYPE)]))
    empty.createOrReplaceTempView("frontier")

    def casts() -> str:
        return ", ".join(f"CAST(`{f.name}` AS {f.dataType.simpleString()}) AS `{f.name}`" for f in schema.fields)

    init_body = _clean(model.init.text)
    out = _analyze(spark, model.init, init_body)
    has_choice = _check_outputs(model, schema, model.init, out, parent=False)
    choice = "CAST(_choice AS BIGINT)" if has_choice else "CAST(0 AS BIGINT)"
    init_sql = f"SELECT {casts()}, {choice} AS _key, 'Init' AS _action FROM (\n{init_body})"

    branches = []
    for idx, f in enumerate(model.actions):
        body = _clean(f.text)
        out = _analyze(spark, f, body)
        has_choice = _check_outputs(model, schema, f, out, parent=True)
        ch = "CAST(_choice AS BIGINT)" if has_choice else "CAST(0 AS BIGINT)"
        if model.successor_order == "choice_first":
            sub = f"(({ch}) * {1 << ACTION_BITS} + {idx})"
        else:
            sub = f"({idx} * {1 << CHOICE_BITS} + ({ch}))"
        # The key orders successors as TLC's breadth-first search meets them: by the parent's
        # position, then the action and the existential witness in the order Next names them.
        key = (f"_parent.ord * {1 << (ACTION_BITS + CHOICE_BITS)} + "
               f"IF(({ch}) BETWEEN 0 AND {MAX_CHOICE}, {sub}, "
               f"raise_error('{f.name}: _choice out of range 0..{MAX_CHOICE}'))")
        branches.append(
            f"SELECT {casts()}, _parent.fp AS _parent_fp, _parent.fp2 AS _parent_fp2, _parent.ord AS _parent_ord,\n"
            f"  {key} AS _key, '{f.name}' AS _action\nFROM (\n{body})"
        )
    successors_sql = "\nUNION ALL\n".join(branches)

    inv = {}
    for name, f in model.invariants.items():
        inv[name] = _expression(spark, f)
    cons = {}
    for name, f in model.constraints.items():
        cons[name] = _expression(spark, f)
    terminals = {name: _expression(spark, f) for name, f in model.terminal_findings.items()}
    return CompiledModel(model, schema, init_sql, successors_sql, inv, cons, terminals)


def _expression(spark: SparkSession, f: SqlFile) -> str:
    expr = "(" + _clean(f.text) + ")"
    out = _analyze(spark, f, f"SELECT {expr} AS v FROM frontier")
    if not isinstance(out.fields[0].dataType, BooleanType):
        raise ModelError(f"{f.path}: a {f.kind} is a boolean SQL expression over one state; "
                         f"this one is {out.fields[0].dataType.simpleString()}")
    return expr


class FixedExpansion:
    """The union of every action analyzed once per run, run over each small level in turn.

    Spark analyzes a query before it optimizes and runs it, and the union of every action is a large
    query: about 0.4 s of analysis a level for ledger chaining's 13 actions, 1 to 2 s for
    bookkeeper's 22. Here the union (with what ``finish`` adds: fingerprints, invariants) is built
    once over a fixed folder, read as Parquet and cached (``DataFrame.cache``). Each level links its
    stored Parquet files (the frontier) into that folder, in place of the last level's, and calls
    ``spark.catalog.refreshByPath`` on it, which drops the
    cached data of every plan reading the folder and lists it again; a query derived from the kept
    plan is then planned with the new level's cached data in place (Spark substitutes cached data
    into a plan after analysis), so a level pays for optimization and running, not analysis. The
    actions' branches scan the cached level, not Parquet.

    The successors name their parents' fingerprints: ``check_parents`` refuses successors that do
    not come from the level just written (a plan that kept stale data would be a wrong search, not
    a slow one).
    """

    def __init__(self, spark: SparkSession, cm: CompiledModel, folder: Path, schema: StructType,
                 finish: Callable[[DataFrame, bool], DataFrame]):
        self.spark, self.cm, self.folder, self.schema, self.finish = spark, cm, folder, schema, finish
        self.source: DataFrame | None = None
        self.plans: dict[bool, DataFrame] = {}

    def successors(self, files: list[str], annotate: bool) -> DataFrame:
        """The successors of the level stored in ``files`` (Parquet, with at least the columns of
        ``schema``: the variables, ``_ord``, ``_fp``, ``_fp2``), finished by
        ``finish(successors, annotate)``."""
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder.mkdir(parents=True)
        for i, f in enumerate(files):
            # A hard link: the level's file is not copied (a copy where links are refused).
            target = self.folder / f"part-{i:05d}-{Path(f).name}"
            try:
                os.link(f, target)
            except OSError:
                shutil.copyfile(f, target)
        if self.source is None:
            self.source = self.spark.read.schema(self.schema).parquet(str(self.folder)).cache()
            names = [f"`{f.name}`" for f in self.cm.schema.fields]
            (self.source.selectExpr(*names, "named_struct('fp', _fp, 'fp2', _fp2, 'ord', _ord) AS _parent")
             .createOrReplaceTempView("frontier"))
            union = self.spark.sql(self.cm.successors_sql)
            self.plans = {flag: self.finish(union, flag) for flag in (False, True)}
        else:
            self.spark.catalog.refreshByPath(str(self.folder))
        return self.plans[annotate].select("*")

    @staticmethod
    def check_parents(successors: pa.Table, frontier: pa.Table) -> None:
        parents = pa.table({"_fp": successors["_parent_fp"], "_fp2": successors["_parent_fp2"]})
        known = pa.table({"_fp": frontier["_fp"], "_fp2": frontier["_fp2"]})
        if parents.num_rows and parents.join(known, ["_fp", "_fp2"], join_type="left anti").num_rows:
            raise RuntimeError("successors of states that are not the frontier's: the fixed expansion read "
                               "stale data (run with SSE_FIXED_PLAN=0 and report it)")

    def close(self) -> None:
        if self.source is not None:
            self.source.unpersist()
            self.source, self.plans = None, {}
        shutil.rmtree(self.folder, ignore_errors=True)
