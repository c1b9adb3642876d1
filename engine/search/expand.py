"""Stage: expand. The model's SQL files compiled into queries over the frontier, and run over each level.

Every action file is a query over the view ``frontier`` (the state variables plus ``_parent``, the
row's identity, which the action passes through). The engine checks each file once against an
empty frontier (so a syntax error or a wrong column names its file), then unions all actions into
one query that each level re-runs over the new frontier. The stage also counts what the level
generated, per action (TLC's coverage), and finds the parents without successors (deadlock) or
without one that moves (terminal findings).
"""
from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

from pyspark.errors import PySparkException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql.types import (
    ArrayType, BooleanType, DataType, IntegerType, LongType, NullType, NumericType, StructField, StructType,
)

from engine.errors import ModelError
from engine.model.loader import Model, SqlFile

__all__ = ["CompiledModel", "Counts", "NARROW", "Refetch", "compile_model", "count", "totals",
           "first_without_successor", "initial", "planning_threads", "slice_bounds", "slice_line",
           "state_schema", "successors", "terminal_findings", "without_moving_successor", "PARENT_TYPE"]

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
    # Every declared type parsed in one call (a call into the JVM each is slow); variable by variable
    # only to say which declaration Spark refuses.
    try:
        whole = spark.createDataFrame([], ", ".join(f"`{v.name}` {v.type}" for v in model.variables)).schema
    except PySparkException:
        whole = None
    if whole is not None and [f.name for f in whole.fields] == list(model.variable_names):
        return StructType([StructField(f.name, f.dataType, True) for f in whole.fields])
    fields = []
    for v in model.variables:
        try:
            got, why = spark.createDataFrame([], f"`{v.name}` {v.type}").schema.fields, None
        except PySparkException as exc:
            got, why = [], _spark_message(exc)
        if len(got) != 1:
            raise ModelError(f"{model.schema_path}: variable {v.name}: {v.type!r} is not a Spark SQL type "
                             f"({why or f'it reads as {len(got)} columns'})") from None
        fields.append(StructField(v.name, got[0].dataType, True))
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
    # Each action's place in ``successors_sql``: (start, end, file, offset of the file's text).
    spans: list[tuple[int, int, SqlFile, int]] = field(default_factory=list)
    # What the last query put before ``successors_sql`` (the CTE naming a level's view), in characters.
    prefix: int = 0
    # Each temporal property's state predicates, as SQL expressions (one, or two for ~>).
    property_exprs: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def action_names(self) -> list[str]:
        """The actions in Next's order (the ``_action`` values successors carry)."""
        return [f.name for f in self.model.actions]

    def init(self, spark: SparkSession) -> DataFrame:
        return spark.sql(self.init_sql)

    def successors(self, spark: SparkSession, frontier: DataFrame, view: str | None = None) -> DataFrame:
        """Every action's successors of ``frontier``. With ``view``, the frontier is registered under
        that name and the query reads it through a CTE named ``frontier``: through Spark Connect a
        query is analyzed again each time it runs, so a level's successors must not name a view the
        next level replaces."""
        if view is None:
            frontier.createOrReplaceTempView("frontier")
            return spark.sql(self.successors_sql)
        frontier.createOrReplaceTempView(view)
        head = f"WITH frontier AS (SELECT * FROM `{view}`)\n"
        self.prefix = len(head)
        return spark.sql(head + self.successors_sql)

    def branches_over(self, spark: SparkSession, view: str) -> DataFrame:
        """Every action's successors of the rows of ``view`` that have the action's bit set in their
        ``_acts`` (bit ``i`` for the ``i``-th action in Next's order): each branch of the union reads a
        frontier of its own, the parents it is asked to expand again (``refetch``)."""
        variables = ", ".join(f"`{v}`" for v in self.model.variable_names)
        parts = [f"(WITH frontier AS (SELECT {variables}, _parent FROM `{view}` WHERE (_acts & {1 << i}) <> 0)\n"
                 f"{self.successors_sql[lo:hi]})" for i, (lo, hi, _f, _at) in enumerate(self.spans)]
        return spark.sql("\nUNION ALL\n".join(parts))

    def locate_error(self, exc: PySparkException) -> str | None:
        """``file:line`` of the model SQL an error Spark raised while running it points at (its query
        context), or None when it points at none (an error of the engine or of Spark itself)."""
        for ctx in exc.getQueryContext() or []:
            try:
                fragment, start = ctx.fragment(), ctx.startIndex()
            except Exception:  # a DataFrame context has no SQL text
                continue
            if not fragment:
                continue
            # An action's SQL runs inside the union of every action: the offset names the branch (past
            # the CTE that names a level's view, where there is one).
            if start >= self.prefix and self.successors_sql[start:start + len(fragment)] != fragment:
                start -= self.prefix
            if 0 <= start and self.successors_sql[start:start + len(fragment)] == fragment:
                for lo, hi, f, at in self.spans:
                    if lo <= start < hi:
                        return f"{f.path}:{_line(f.text, start - at)}"
            found = [f for f in self.model.sql_files() if fragment in f.text]
            if found:
                f = found[0]
                return f"{f.path}:{_line(f.text, f.text.index(fragment))}"
        return None


def _line(text: str, offset: int) -> int:
    """The line of ``text`` at ``offset`` (the first, before the text starts; 1-based)."""
    return text.count("\n", 0, max(offset, 0)) + 1


def _analyze(spark: SparkSession, f: SqlFile, sql: str) -> StructType:
    try:
        return spark.sql(sql).schema
    except PySparkException as exc:
        raise ModelError(f"{f.path}: {_spark_message(exc)}") from None


def _analyze_all(spark: SparkSession, queries: list[tuple[SqlFile, str]],
                 threads: int = 0) -> list[StructType | ModelError]:
    """Each query's output schema, or the error that names its file, analyzed on
    ``planning_threads()`` threads at once (Spark's parser and analyzer are CPU work in the driver's
    JVM, on the Py4J thread of each call, so the queries analyze in parallel). The caller raises the
    errors (``_schema_of``) in the order it checks the files, as if they were analyzed one by one."""

    def one(q: tuple[SqlFile, str]) -> StructType | ModelError:
        try:
            return _analyze(spark, *q)
        except ModelError as exc:
            return exc
    threads = min(planning_threads(threads), len(queries))
    if threads <= 1:
        return [one(q) for q in queries]
    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(one, queries))


def _schema_of(analyzed: StructType | ModelError) -> StructType:
    if isinstance(analyzed, ModelError):
        raise analyzed
    return analyzed


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


def compile_model(spark: SparkSession, model: Model, threads: int = 0) -> CompiledModel:
    _define_functions(spark, model)
    schema = state_schema(spark, model)
    empty = spark.createDataFrame([], StructType([*schema.fields, StructField("_parent", PARENT_TYPE)]))
    empty.createOrReplaceTempView("frontier")

    def casts() -> str:
        return ", ".join(f"CAST(`{f.name}` AS {f.dataType.simpleString()}) AS `{f.name}`" for f in schema.fields)

    init_body = _clean(model.init.text)
    bodies = [_clean(f.text) for f in model.actions]
    expressions = [*model.invariants.values(), *model.constraints.values(), *model.terminal_findings.values(),
                   *(pred for prop in model.properties.values() for pred in prop.predicates)]
    outs = _analyze_all(spark, [(model.init, init_body), *zip(model.actions, bodies),
                                *((f, _expression_query(f)) for f in expressions)], threads)
    out = _schema_of(outs[0])
    has_choice = _check_outputs(model, schema, model.init, out, parent=False)
    choice = "CAST(_choice AS BIGINT)" if has_choice else "CAST(0 AS BIGINT)"
    init_sql = f"SELECT {casts()}, {choice} AS _key, 'Init' AS _action FROM (\n{init_body})"

    branches, spans, at = [], [], 0
    for idx, (f, body, out) in enumerate(zip(model.actions, bodies, outs[1:])):
        has_choice = _check_outputs(model, schema, f, _schema_of(out), parent=True)
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
        head = (f"SELECT {casts()}, _parent.fp AS _parent_fp, _parent.fp2 AS _parent_fp2, _parent.ord AS _parent_ord,\n"
                f"  {key} AS _key, '{f.name}' AS _action\nFROM (\n")
        branches.append(f"{head}{body})")
        # The body is the file's text from its first non-blank character (_clean).
        spans.append((at, at + len(branches[-1]), f, at + len(head) - (len(f.text) - len(f.text.lstrip()))))
        at += len(branches[-1]) + len("\nUNION ALL\n")
    successors_sql = "\nUNION ALL\n".join(branches)

    checked = iter(zip(expressions, outs[1 + len(bodies):]))
    inv = {name: _expression(*next(checked)) for name in model.invariants}
    cons = {name: _expression(*next(checked)) for name in model.constraints}
    terminals = {name: _expression(*next(checked)) for name in model.terminal_findings}
    props = {name: tuple(_expression(*next(checked)) for _ in prop.predicates)
             for name, prop in model.properties.items()}
    return CompiledModel(model, schema, init_sql, successors_sql, inv, cons, terminals, spans, property_exprs=props)


def _expression_query(f: SqlFile) -> str:
    return f"SELECT ({_clean(f.text)}) AS v FROM frontier"


def _expression(f: SqlFile, out: StructType | ModelError) -> str:
    """The expression of ``f`` (an invariant, constraint or terminal finding), whose query
    (``_expression_query``) Spark analyzed to ``out``."""
    out = _schema_of(out)
    if not isinstance(out.fields[0].dataType, BooleanType):
        raise ModelError(f"{f.path}: a {f.kind} is a boolean SQL expression over one state; "
                         f"this one is {out.fields[0].dataType.simpleString()}")
    return "(" + _clean(f.text) + ")"


def planning_threads(setting: int = 0) -> int:
    """Threads that analyze a model's queries and generate the code of a union's branches at once:
    as many as the CPUs this process may use, unless the setting ``planning_threads`` says (1: one
    branch after the other, as Spark does)."""
    return setting or len(os.sched_getaffinity(0))


# ---- the stage ---------------------------------------------------------------------------------

def initial(spark: SparkSession, cm: CompiledModel) -> DataFrame:
    """The initial states, as successors of no parent."""
    return cm.init(spark).selectExpr("*", "CAST(NULL AS BIGINT) AS _parent_fp", "CAST(NULL AS BIGINT) AS _parent_fp2",
                                     "CAST(NULL AS BIGINT) AS _parent_ord")


def successors(spark: SparkSession, cm: CompiledModel, states: DataFrame, view: str) -> DataFrame:
    """Every action's successors of the stored ``states`` (a level: the variables, ``_fp``, ``_fp2``,
    ``_ord``), each naming its parent (``_parent_fp``, ``_parent_fp2``, ``_parent_ord``), its
    ``_action`` and its ``_key`` in TLC's order."""
    frontier = states.selectExpr(*[f"`{v}`" for v in cm.model.variable_names],
                                 "named_struct('fp', _fp, 'fp2', _fp2, 'ord', _ord) AS _parent")
    return cm.successors(spark, frontier, view=view)


# The columns a level's successors keep through de-duplication: what it counts, joins and orders on.
NARROW = ["_fp", "_fp2", "_key", "_action", "_parent_fp", "_parent_fp2", "_parent_ord"]


class Refetch:
    """A level's chosen successors, whole, from their narrow columns (``NARROW``), by expanding again
    the parents they came from, each through the action that made them: a successor is kilobytes, a
    level makes several for each new state, and keeping them all whole until the few new ones are
    known (a checkpoint of every successor, written and read) costs more than computing the new
    ones twice. A successor is found again by its ``_key`` (its parent, action and witness). Where one
    key names several successors (an action without ``_choice`` with more than one from a parent),
    the rows fetched outnumber those chosen; ``exact`` fetches them matched on the fingerprint too."""

    def __init__(self, spark: SparkSession, cm: CompiledModel, fingerprint: Callable[[DataFrame], DataFrame],
                 states: DataFrame, view: str, keep: Callable[[DataFrame], DataFrame], broadcast_rows: int,
                 mark: Callable[[str], None] = lambda _: None):
        self.spark, self.cm, self.fingerprint, self.states, self.view = spark, cm, fingerprint, states, view
        self.keep, self.broadcast_rows, self.mark = keep, broadcast_rows, mark
        self.chosen: DataFrame | None = None
        self.n = 0

    def __call__(self, chosen: DataFrame, n: int) -> DataFrame:
        """The successors whose narrow rows are ``chosen`` (``n`` of them, a checkpoint), found by key."""
        from pyspark.sql import functions as F
        self.chosen, self.n = chosen, n
        # Each parent with the actions to run on it again, a bit each (Next has at most 2^ACTION_BITS).
        names = ", ".join(f"'{a}'" for a in self.cm.action_names)
        bit = F.expr(f"shiftleft(CAST(1 AS BIGINT), CAST(array_position(array({names}), _action) - 1 AS INT))")
        acts = self.keep(chosen.groupBy("_parent_ord").agg(F.bit_or(bit).alias("_acts")))
        parents = self.states.join(self._small(acts), self.states["_ord"] == acts["_parent_ord"])
        parents.selectExpr(*[f"`{v}`" for v in self.cm.model.variable_names],
                           "named_struct('fp', _fp, 'fp2', _fp2, 'ord', _ord) AS _parent",
                           "_acts").createOrReplaceTempView(self.view)
        self.mark("acts")
        rows = self._rows(exact=False)
        self.mark("refetch")  # (the second expansion planned: its jobs run as the rows are read)
        return rows

    def exact(self) -> DataFrame:
        """The chosen successors matched on key and fingerprint: one row each."""
        return self._rows(exact=True)

    def _small(self, df: DataFrame) -> DataFrame:
        from pyspark.sql import functions as F
        return F.broadcast(df) if self.n <= self.broadcast_rows else df

    def _rows(self, exact: bool) -> DataFrame:
        made = self.cm.branches_over(self.spark, self.view)
        keys = ["_key", "_fp", "_fp2"]
        chosen = self._small(self.chosen.select(*keys))
        if exact:
            made = self.fingerprint(made)
            return made.join(chosen, keys, "left_semi").dropDuplicates(keys).select(*made.columns)
        return made.join(chosen, "_key").select(*made.columns, "_fp", "_fp2")


@dataclass
class Counts:
    generated: int
    per_action: dict[str, int]
    parents: int          # parents with at least one successor (when asked for)
    moving_parents: int   # parents with a successor other than themselves (when asked for)


def totals(actions: list[str]) -> list[Column]:
    """The aggregates that count a level's successors (``n``) and those of each action (``a<i>``, in
    Next's order): observed while the successors are checkpointed (engine.runtime.session.kept_observed)."""
    from pyspark.sql import functions as F
    return [F.count(F.lit(1)).alias("n"), *[F.count_if(F.col("_action") == F.lit(a)).alias(f"a{i}")
                                            for i, a in enumerate(actions)]]


def count(actions: list[str], parents: bool, moving: bool, read: Callable[..., dict]) -> Counts:
    """The level's successors counted, per action too, from ``read`` (what ``kept_observed`` returned
    with ``totals``). The parents with a successor (``parents``: deadlock) or with one that moves
    (``moving``: terminal findings) are distinct counts, which metrics cannot observe: a job of their own."""
    from pyspark.sql import functions as F
    more = []
    if parents:
        more.append(F.count_distinct("_parent_ord").alias("p"))
    if moving:
        more.append(F.count_distinct(F.when(_moves(), F.col("_parent_ord"))).alias("m"))
    row = read(*more)
    return Counts(int(row["n"]), {a: int(row[f"a{i}"]) for i, a in enumerate(actions)},
                  int(row["p"]) if parents else 0, int(row["m"]) if moving else 0)


def _moves():
    from pyspark.sql import functions as F
    return ~((F.col("_fp") == F.col("_parent_fp")) & (F.col("_fp2") == F.col("_parent_fp2")))


def slice_bounds(frontier: DataFrame, slices: int) -> list[int]:
    """Where a level's frontier is cut into about ``slices`` ranges of ``_ord`` of about equal size
    (a sliced level, settings.slice_successors): the ascending lower bounds of every range but the first."""
    return [int(b) for b in sorted(set(frontier.approxQuantile("_ord", [i / slices for i in range(1, slices)], 0.001)))]


def slice_line(depth: int, i: int, slices: int, parents: int, generated: int, new: int, seconds: float) -> str:
    """The line a sliced level prints on stderr as its slice ``i`` (from 0) of ``slices`` ends."""
    return (f"engine: depth {depth}, slice {i + 1} of {slices}: {parents:,} parents, {generated:,} generated, "
            f"{new:,} new ({seconds:.1f} s into the level)")


def first_without_successor(states: DataFrame, successors_: DataFrame) -> dict:
    """The first state of the level (in TLC's order) that has no successor: a deadlock."""
    enabled = successors_.selectExpr("_parent_ord AS _ord").distinct()
    row = states.join(enabled, on="_ord", how="left_anti").orderBy("_ord").limit(1).collect()[0]
    return row.asDict(recursive=True)


def without_moving_successor(states: DataFrame, successors_: DataFrame) -> DataFrame:
    """The level's states whose every successor is the state itself, or that have none."""
    movers = successors_.where(_moves()).selectExpr("_parent_ord AS _ord").distinct()
    return states.join(movers, on="_ord", how="left_anti")


def terminal_findings(terminal: DataFrame, exprs: dict[str, str]) -> dict[str, tuple[int, dict]]:
    """For each finding that holds in some of the ``terminal`` states: how many, and the first (in
    TLC's order) as a stored row."""
    from pyspark.sql import functions as F
    aggs = []
    for i, expr in enumerate(exprs.values()):
        flag = F.coalesce(F.expr(expr), F.lit(False))
        aggs += [F.count_if(flag).alias(f"n{i}"),
                 F.min_by(F.struct(*terminal.columns), F.when(flag, F.col("_ord"))).alias(f"x{i}")]
    row = terminal.agg(*aggs).collect()[0]
    return {name: (int(row[f"n{i}"]), row[f"x{i}"].asDict(recursive=True))
            for i, name in enumerate(exprs) if int(row[f"n{i}"])}
