"""The local accelerator's held plans: the actions' union planned once per run and run again over
each new frontier, in classic local mode, through Spark's internal APIs and the engine's JVM helpers
(SwitchRows, ArrowFrontier). Optional: the portable path (engine.search) plans each level with public
APIs, and the accelerator falls back to that where a hook is missing.
"""
from __future__ import annotations

import os
import re
import shutil
import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

import pyarrow as pa
from pyspark import StorageLevel

from py4j.java_collections import ListConverter
from py4j.protocol import Py4JError
from pyspark.errors.exceptions.captured import unwrap_spark_exception
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.serializers import ArrowCollectSerializer
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import ArrayType, DataType, LongType, MapType, StructField, StructType
from pyspark.util import _load_from_socket

import engine.runtime.jvm_ext as jvm_ext
from engine.search.expand import CompiledModel, planning_threads
from engine.search.encoding import json_exact
from engine.settings import Settings

__all__ = ["HeldExpansion", "HeldPlanUnavailable", "HeldRows", "rows_frame", "union_by_part", "nullable", "parked",
           "drop_parked"]

# The held unions of runs that ended, by what their plans depend on (``HeldExpansion.key``): a later
# run of the same model, configuration and settings in this process (an engine server's next
# command) takes one over instead of analyzing, planning and generating the code of every action
# again. A plan is taken by one run at a time, and parked again when that run ends well.
_PARKED: OrderedDict[str, dict] = OrderedDict()
_PARKED_LOCK = threading.Lock()
PARKED_MAX = 4  # (each holds an action union's plan and generated classes in the JVM)


def parked() -> dict[str, int]:
    """The parked plans' keys and how many runs took each over."""
    with _PARKED_LOCK:
        return {k: v["uses"] for k, v in _PARKED.items()}


def drop_parked() -> None:
    """Let every parked plan go."""
    with _PARKED_LOCK:
        _PARKED.clear()


def rows_frame(spark: SparkSession, rdd, schema) -> DataFrame:
    """A DataFrame whose plan is ``rdd`` (a JVM RDD of Spark's internal rows of ``schema``, a
    ``StructType`` or its JVM counterpart from ``jvm_schema``): Spark neither analyzes nor optimizes
    what made the rows again. The engine's one door into this internal API (the held unions, the seen
    index's sorted runs)."""
    jsp = spark._jsparkSession
    jschema = jvm_schema(spark, schema) if isinstance(schema, StructType) else schema
    return DataFrame(jsp.internalCreateDataFrame(rdd, jschema, False), spark)


def arrow_schema_of(df: DataFrame) -> pa.Schema:
    """The Arrow schema ``df.toArrow()`` gives ``df``'s rows (with Spark's default settings)."""
    return to_arrow_schema(df.schema, error_on_duplicated_field_names_in_struct=True, timezone="UTC",
                           prefers_large_types=False)


def collect_arrow(df: DataFrame, schema: pa.Schema) -> pa.Table:
    """``df.toArrow()`` for a DataFrame run again and again (a small level's job): the same transfer
    (Spark's Arrow batches through a local socket), without looking up two session settings and
    setting the job's call site each time, about ten Py4J calls."""
    port, secret, server = df._jdf.collectAsArrowToPython()
    try:
        with _load_from_socket((port, secret), ArrowCollectSerializer()) as stream:
            batches = list(stream)
    finally:
        with unwrap_spark_exception():
            server.getResult()  # (the job's error, if it failed)
    if not batches:
        return schema.empty_table()
    return pa.Table.from_batches(batches).cast(schema)


def partitions_of(spark: SparkSession, rdd, numbers: list[int]):
    """The JVM RDD ``rdd`` cut to the partitions ``numbers`` (Spark's ``PartitionPruningRDD``, in
    their own order): its partition filter is a Scala set of partition numbers, a set being a
    function to booleans, so no JVM code of the engine's is needed."""
    jvm = spark._jvm
    keep = jvm.java.util.HashSet()
    for n in numbers:
        keep.add(n)
    only = jvm.scala.jdk.javaapi.CollectionConverters.asScala(keep).toSet()
    return jvm.org.apache.spark.rdd.PartitionPruningRDD.create(rdd, only)


def union_by_part(spark: SparkSession, union: DataFrame, parts: int | None = None,
                  threads: int = 0) -> DataFrame | None:
    """The actions' ``union`` over a frontier of ``parts`` partitions (any number, when None) with
    one partition per frontier partition, the j-th holding every action's successors of the j-th
    (Spark's ``SQLPartitioningAwareUnionRDD``): a task runs every action over its share of the
    frontier, so the plan (every action's, large for a model of many actions) is deserialized and its
    operators' code generated once per part rather than once per action and part. None when the
    plan is not a union of one RDD per action with that many partitions each (an action that
    shuffles, a Spark before 4.1): the caller keeps ``union``. Only the tasks' shares of the work
    depend on this, not the rows."""
    if _fixed_at_planning(union):
        return None  # (adaptive execution would run its stages at toRdd; an action that shuffles)
    plan = union._jdf.queryExecution().executedPlan()
    threads = planning_threads(threads)
    if plan.getClass().getSimpleName() == "UnionExec" and threads > 1:
        # Each action's branch generates its code (Spark writes its Java source) on a thread of its
        # own, as many at a time as the process has CPUs, where UnionExec makes them one after the
        # other (at a cold start the JIT's threads hold the other cores, and it gains little).
        children = plan.children()
        with ThreadPoolExecutor(min(threads, children.size())) as pool:
            rdds = list(pool.map(lambda i: children.apply(i).execute(), range(children.size())))
        branches = spark._jvm.org.apache.spark.api.python.PythonUtils.toSeq(
            ListConverter().convert(rdds, spark.sparkContext._gateway._gateway_client))
        tag = rdds[0].elementClassTag()
    else:
        rdd = union._jdf.queryExecution().toRdd()
        if rdd.getClass().getName() == "org.apache.spark.sql.execution.SQLExecutionRDD":
            rdd = rdd.sqlRDD()  # (the finished plan's own propagates the SQL conf to the tasks)
        n = int(rdd.getNumPartitions())
        if n == parts:
            return union  # one action: already a partition per part
        if rdd.getClass().getName() != "org.apache.spark.rdd.UnionRDD":
            # One action, without a shuffle (above): a partition per frontier partition already.
            return rows_frame(spark, rdd, union.schema) if parts is None else None
        branches, tag = rdd.rdds(), rdd.elementClassTag()
    sizes = {int(branches.apply(i).getNumPartitions()) for i in range(branches.size())}
    if len(sizes) != 1 or (parts is not None and sizes != {parts}):
        return None
    try:
        by_part = spark._jvm.org.apache.spark.rdd.SQLPartitioningAwareUnionRDD(
            spark.sparkContext._jsc.sc(), branches, sizes.pop(), tag)
    except Py4JError:  # a Spark without it (before 4.1)
        return None
    return rows_frame(spark, by_part, union.schema)


def _lineage_on_driver(rdd):
    """``rdd`` with its and its ancestors' partitions and dependencies worked out here: a
    ``SwitchRows`` target is not walked by the scheduler (it declares no dependency), and a task
    cannot list files (``binaryFiles``) or work out a union's dependencies for itself."""
    rdd.partitions()
    deps = rdd.dependencies()
    for i in range(deps.size()):
        _lineage_on_driver(deps.apply(i).rdd())
    return rdd


def jvm_schema(spark: SparkSession, schema: StructType):
    return spark._jsparkSession.parseDataType(schema.json())


class HeldPlanUnavailable(RuntimeError):
    """Spark does not let the planned union be run again as expected (the search plans each level)."""


# Physical operators whose data is fixed when the plan is executed the first time: a shuffle's map
# output (its RDD run again reads the same files), a broadcast, a subquery's value, and adaptive
# execution (which runs its stages while planning). A plan with one is not run again over a new
# frontier.
_FIXED_AT_PLANNING = re.compile(r"^[\s:|+\-*()\d]*(AdaptiveSparkPlan|Exchange|ShuffleExchange|BroadcastExchange"
                                r"|ReusedExchange|Subquery|SubqueryBroadcast|ReusedSubquery)\b", re.MULTILINE)


def _fixed_at_planning(df: DataFrame) -> list[str]:
    return sorted(set(_FIXED_AT_PLANNING.findall(df._jdf.queryExecution().executedPlan().toString())))


def _check_rerunnable(df: DataFrame) -> None:
    found = _fixed_at_planning(df)
    if found:
        raise HeldPlanUnavailable(f"held expansion: the actions' plan has {', '.join(found)}, whose data a "
                                  "plan run again would not read afresh")


def nullable(dt: DataType) -> DataType:
    """``dt`` with every field, element and value nullable: a plan made for it reads rows of any
    schema that differs from it in nullability only."""
    if isinstance(dt, StructType):
        return StructType([StructField(f.name, nullable(f.dataType), True, f.metadata) for f in dt.fields])
    if isinstance(dt, ArrayType):
        return ArrayType(nullable(dt.elementType), True)
    if isinstance(dt, MapType):
        return MapType(nullable(dt.keyType), nullable(dt.valueType), True)
    return dt


class HeldRows:
    """A plan over a frontier of ``parts`` partitions, planned once and run again over each new
    frontier: its leaf is ``sse.SwitchRows`` (engine/runtime/jvm/SwitchRows.java), an RDD whose rows are
    those of the RDD it was last pointed at. A Spark level's frontier is a checkpoint in the JVM
    (not the files the small levels' ``HeldExpansion`` reads), and analyzing, optimizing and
    generating the code of the union of every action again each level is CPU work on the driver,
    while that level's Parquet write runs on the cores."""

    def __init__(self, spark: SparkSession, parts: int, schema: StructType, switch=None):
        """``schema``: the frontiers' (the plan is made for it with every field nullable, so that it
        reads frontiers whose schemas differ in what they declare non-null: ``nullable``). A
        frontier's rows may carry more columns after these: the plan reads a row's fields by their
        position, and never passes a frontier row on whole (the successors are new rows). ``switch``:
        the leaf of a union planned already (``HeldExpansion.shared_union``), else a new one."""
        self.spark, self.parts = spark, parts
        self.switch = switch if switch is not None else spark._jvm.sse.SwitchRows(spark.sparkContext._jsc.sc(), parts)
        self.leaf = rows_frame(spark, self.switch, nullable(schema))
        self._plan = None

    def hold(self, df: DataFrame) -> None:
        """Plan ``df`` (made over ``leaf``) for good; raises HeldPlanUnavailable for a plan whose
        data would be fixed the first time it runs."""
        _check_rerunnable(df)
        self._plan = (df._jdf.queryExecution().toRdd(), jvm_schema(self.spark, df.schema))

    def run(self, frontier: DataFrame) -> DataFrame:
        """The held plan's rows over ``frontier`` (rows of the leaf's schema, under a plan that is
        their RDD: a checkpoint's, ``rows_frame``'s), as a DataFrame whose plan is that RDD."""
        rdd, schema = self._plan
        self.switch.setTarget(frontier._jdf.queryExecution().analyzed().rdd())
        return rows_frame(self.spark, rdd, schema)


class HeldExpansion:
    """The union of every action planned once per run, its job run again over each small level.

    A Spark query is analyzed, optimized and physically planned before it runs; for the union of
    every action that costs more than running the job over a handful of states. Here the union
    (with what ``finish`` adds: fingerprints, invariants) is planned once, and each level runs the
    RDD of that plan again (``QueryExecution.toRdd``, wrapped in a DataFrame whose plan is that RDD)
    after putting the new frontier where the plan's leaf reads it.

    The leaf must read what is there when the job runs, not what was there when it was planned: a
    Parquet scan lists its files and their sizes at planning time, and a leaf computed in Python
    costs a Python task a level. So the frontier is ``parts`` files (one a core) of
    consecutive states of the frontier with their ``_ord``, ``_fp`` and ``_fp2``, written on the
    driver from its Arrow copy, each read by a reader that reads a file whole, whatever its size when
    it was listed:
    - with the engine's JVM functions (engine.runtime.jvm_ext), an Arrow IPC stream read with
      ``binaryFiles`` and decoded by Spark's Arrow reader (engine/runtime/jvm/ArrowFrontier.java): nothing
      to format or parse, and every column type reads back exactly;
    - without them, a JSON array written by Polars, read with ``wholeTextFiles`` and parsed by
      ``from_json`` (only for states whose every column reads back from JSON as the same value,
      ``json_exact``; other models plan the union each level). Parsing it is a good share of the
      tasks' time.
    The decoded frontier is cached in memory so that the actions' branches read it once: switched
    (the engine's default with its JVM functions), the leaf is a ``SwitchRows`` pointed before each
    job at the files' RDD, whose rows each task keeps as row objects for its other branches
    (``SwitchRows.retargetOnce``); otherwise a view over the files is cached (``CACHE TABLE``), its
    RDD dropped and persisted again before each level. Either way the level's job reads the new
    files, once each. The job's j-th task runs every action over the j-th file (``_by_part``).

    The successors name their parents' fingerprints: ``check_parents`` refuses successors that do
    not come from the frontier just written (stale data would be a wrong search, not a slow one).
    """

    def __init__(self, spark: SparkSession, cm: CompiledModel, folder: Path,
                 finish: Callable[[DataFrame, bool], DataFrame], name: str, parts: int = 1,
                 tasks: int | None = None, binary: bool = True, columns: StructType | None = None,
                 union_over: Callable[[DataFrame], DataFrame] | None = None, settings: Settings | None = None,
                 key: str | None = None):
        """``columns`` and ``union_over`` (Arrow files only): the frontier files hold these columns,
        and the union is ``union_over(leaf)`` over a ``SwitchRows`` leaf of them (``switched``), the
        plan the Spark levels hold (``HeldRows``) over the same columns: Spark generates the same
        code for the actions, which Janino's cache and the JIT then share. Otherwise the files hold
        the state's columns with ``_ord``, ``_fp`` and ``_fp2``, read through a cached view.
        ``key`` (switched only): everything the plans depend on but the frontier's files, under which
        they are parked when the run ends (``adopt``)."""
        self.spark, self.cm, self.folder, self.finish = spark, cm, folder, finish
        self.binary = binary  # Arrow files (ArrowFrontier), else JSON
        self.switched = binary and columns is not None and union_over is not None
        self.settings = settings = settings or Settings()
        # settings.by_part off: the frontier in one file and the union's partitions coalesced into
        # ``tasks`` (for comparisons).
        self.by_part = settings.by_part
        self.parts = max(1, parts) if self.by_part else 1
        self.tasks = tasks or self.parts
        self.layout: str | None = None  # "by part" or "coalesced", once planned
        self.view = name
        self.files = [folder / f"part-{j:05d}.{'arrow' if binary else 'json'}" for j in range(self.parts)]
        if self.switched:
            self.leaf_schema = columns
            self.union_over = union_over
        else:
            self.leaf_schema = StructType([*cm.schema.fields, *(StructField(c, LongType(), False)
                                                                for c in ("_ord", "_fp", "_fp2"))])
        self.columns = [f.name for f in self.leaf_schema.fields]
        self.arrow_schema = to_arrow_schema(self.leaf_schema) if binary else None
        self._switch = None  # (switched) the leaf's SwitchRows
        self._files_rdd = None  # (switched) the files' rows, an RDD of a partition a file
        self._union = None  # (switched) the actions' union over the leaf
        self._by_part_frame = None  # (switched, by part) that union, a partition per file (``_by_part``)
        self._plans: dict[bool, tuple] = {}
        self._frames: dict[tuple, tuple] = {}  # the jobs' DataFrames and Arrow schemas, by plan and task count
        self._empty: set[int] = set()  # the files known to hold no state
        self._cache_rdd = None
        self._cache_level = None
        self._fresh = True  # the cached frontier has not been computed yet
        self.key = key if self.switched else None
        self.adopted = False  # the plans were parked by an earlier run
        self._uses = 0  # the runs before this one that ran these plans (adopted)
        self._job_ok = True  # the last job ran to its end (a plan is parked only then)

    @staticmethod
    def supports(schema: StructType, binary: bool) -> bool:
        return binary or json_exact(schema)

    @staticmethod
    def binary_available(spark: SparkSession, settings: Settings | None = None) -> bool:
        """Whether this process's JVM has the engine's Arrow frontier reader on its class path."""
        return jvm_ext.use(spark, "ArrowFrontier", settings, "small levels' frontier", "written as JSON text")

    def _write(self, frontier: pa.Table | None, split: bool = True) -> None:
        """The frontier in ``parts`` files of consecutive states (as even as the states allow), or
        (not ``split``) all in the first and the others empty."""
        import polars as pl

        self.folder.mkdir(parents=True, exist_ok=True)
        n = 0 if frontier is None else frontier.num_rows
        parts = self.parts if split else 1
        for j, file in enumerate(self.files):
            lo, hi = n * min(j, parts) // parts, n * min(j + 1, parts) // parts
            if hi == lo and j in self._empty:
                continue  # (empty already: a small level's files but the first)
            tmp = self.folder / f".{file.name}.tmp"  # hidden from the reader's listing
            if self.binary:
                with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_stream(sink, self.arrow_schema) as out:
                    if hi > lo:
                        out.write_table(frontier.select(self.columns).slice(lo, hi - lo).cast(self.arrow_schema))
            elif hi == lo:
                tmp.write_bytes(b"[]")
            else:
                pl.from_arrow(frontier.select(self.columns).slice(lo, hi - lo)).write_json(tmp)
            os.replace(tmp, file)
            if hi == lo:
                self._empty.add(j)
            else:
                self._empty.discard(j)

    def prepare(self, annotate: bool) -> None:
        """Plan the union (once per ``annotate``) over the frontier files; call it outside
        ``engine.search.loop.interpreted`` so that the plan keeps Spark's generated code."""
        if annotate in self._plans:
            return
        self._write_missing()
        spark = self.spark
        jsp, jsc = spark._jsparkSession, spark.sparkContext._jsc
        if self.switched:
            self._hold(self._by_part_frame if self._by_part_frame is not None else self._switched_union(), annotate)
            return
        if not self._plans:
            schema = self.cm.schema
            if self.binary:
                rows = None
                for file in self.files:
                    one = rows_frame(spark, spark._jvm.sse.ArrowFrontier.read(jsc, str(file)).rdd(), self.leaf_schema)
                    rows = one if rows is None else rows.unionAll(one)
            else:
                record = f"array<struct<{schema.simpleString()[len('struct<'):-1]},_ord:bigint,_fp:bigint,_fp2:bigint>>"
                strings = spark._jvm.org.apache.spark.sql.Encoders.STRING()
                for file in self.files:
                    text = DataFrame(jsp.createDataset(jsc.wholeTextFiles(str(file), 1).values().rdd(), strings).toDF(),
                                     spark)
                    one = text.selectExpr(f"inline(from_json(value, '{record}', map('mode', 'FAILFAST')))")
                    rows = one if file == self.files[0] else rows.unionAll(one)
            leaf = rows.selectExpr(*[f"`{f.name}`" for f in schema.fields],
                                   "named_struct('fp', _fp, 'fp2', _fp2, 'ord', _ord) AS _parent")
            leaf.createOrReplaceTempView(self.view)
            spark.catalog.cacheTable(self.view, StorageLevel.MEMORY_AND_DISK)
        self._hold(self.cm.successors(spark, spark.table(self.view)), annotate)

    def _write_missing(self) -> None:
        if not all(f.exists() for f in self.files):
            self._empty.clear()
            self._write(None)

    def _switched_union(self) -> DataFrame:
        """(switched) The actions' union over the ``SwitchRows`` leaf, made at the first call."""
        if self._union is None:
            spark, jsc = self.spark, self.spark.sparkContext._jsc
            if self._switch is None:
                self._switch = spark._jvm.sse.SwitchRows(jsc.sc(), self.parts)
            self._files()
            self._union = self.union_over(rows_frame(spark, self._switch, nullable(self.leaf_schema)))
        return self._union

    def _files(self):
        """(switched) The frontier files' rows, a partition a file: what the leaf is pointed at."""
        if self._files_rdd is None:
            spark, jsc = self.spark, self.spark.sparkContext._jsc
            self._write_missing()  # (the files' RDD is listed as it is made)
            files = spark.sparkContext._gateway.new_array(spark._jvm.org.apache.spark.api.java.JavaRDD, self.parts)
            for j, file in enumerate(self.files):
                files[j] = spark._jvm.sse.ArrowFrontier.readRows(jsc, str(file), self.leaf_schema.json())
            self._files_rdd = _lineage_on_driver(jsc.union(files).rdd())
        return self._files_rdd

    def adopt(self) -> str | None:
        """Take over the plans an earlier run with this ``key`` parked, if any: the leaf, the union by
        part and the finished plans, made in another session of this process (the tasks read the
        session settings of the job that runs them, this run's). Returns the seen filter name those
        plans test (``SeenFilter.rename``), None when nothing was parked. Call it before planning."""
        if self.key is None or self._plans or self.layout is not None:
            return None
        with _PARKED_LOCK:
            got = _PARKED.pop(self.key, None)
        if got is None:
            return None
        self._switch, self.layout, self._plans = got["switch"], "by part", dict(got["plans"])
        self._by_part_frame = rows_frame(self.spark, got["by_part"], got["schema"])
        self.adopted, self._uses = True, got["uses"] + 1
        return got["seen"]

    def park(self, seen: str) -> None:
        """Keep this run's plans for a later run with the same ``key`` (``adopt``); ``seen``: the
        seen filter name they test. Only plans whose last job ran to its end, by part."""
        if (self.key is None or not self._job_ok or self.layout != "by part" or not self._plans
                or self._by_part_frame is None):
            return
        leaf = self._by_part_frame._jdf.queryExecution().analyzed()
        if leaf.getClass().getSimpleName() != "LogicalRDD":
            return  # (one action: its plan is the union's own, not an RDD made for it)
        entry = {"switch": self._switch, "by_part": leaf.rdd(), "plans": dict(self._plans), "seen": seen,
                 "schema": jvm_schema(self.spark, self._by_part_frame.schema), "uses": self._uses}
        with _PARKED_LOCK:
            _PARKED.pop(self.key, None)
            _PARKED[self.key] = entry
            while len(_PARKED) > PARKED_MAX:
                _PARKED.popitem(last=False)

    def _hold(self, union: DataFrame, annotate: bool) -> None:
        """``union`` by part, finished, planned for good (``_plans``)."""
        df = self.finish(self._by_part(union), annotate)
        _check_rerunnable(df)
        rdd = df._jdf.queryExecution().toRdd()
        self._plans[annotate] = (rdd, jvm_schema(self.spark, df.schema), int(rdd.getNumPartitions()))

    def _job(self, annotate: bool, tasks: int | None) -> pa.Table:
        """The held plan's job, in at most ``tasks`` tasks, collected as Arrow."""
        rdd, schema, parts = self._plans[annotate]
        if tasks == 1 and self.layout == "by part" and parts > 1:
            key = (annotate, "first")  # every state is in the first file
        elif tasks is not None and tasks < parts:
            key = (annotate, tasks)
        else:
            key = (annotate, None)
        if key not in self._frames:
            # Made once and run again: the plan's RDD is read anew by each job (a small level's
            # DataFrame, planned afresh, would cost Py4J calls every level).
            if key[1] == "first":
                rdd = partitions_of(self.spark, rdd, [0])  # (every action over the first file)
            elif key[1] is not None:
                rdd = rdd.toJavaRDD().coalesce(tasks).rdd()
            df = rows_frame(self.spark, rdd, schema)
            self._frames[key] = (df, arrow_schema_of(df))
        return collect_arrow(*self._frames[key])

    def _by_part(self, union: DataFrame) -> DataFrame:
        """``union`` in ``parts`` partitions, the j-th every action's successors of the j-th part of
        the frontier (``union_by_part``): each task parses its own part and runs every action over
        it, and the tasks have equal shares of the frontier whatever the actions cost (coalesced
        into tasks of whole actions, the task that draws the costliest actions runs alone at the end
        of each level). When the union's plan is not a union of one RDD per action with a partition
        per part (an action that shuffles), its partitions are coalesced into ``tasks`` tasks
        instead. Only the tasks' shares of the work depend on this, not the successors."""
        if self.by_part:
            if self._by_part_frame is not None and self.switched:
                return self._by_part_frame  # (planned for the other ``annotate`` already, or adopted)
            _check_rerunnable(union)  # before toRdd: adaptive execution would run its stages there
            by_part = union_by_part(self.spark, union, self.parts, self.settings.planning_threads)
            if by_part is not None:
                self.layout = "by part"
                if self.switched:
                    self._by_part_frame = by_part
                return by_part
        self.layout = "coalesced"
        return union.coalesce(self.tasks)  # (checked as part of the finished plan)

    def successors(self, frontier: pa.Table, annotate: bool, tasks: int | None = None) -> pa.Table:
        """The successors of ``frontier`` (the states with ``_ord``, ``_fp``, ``_fp2``), finished by
        ``finish(successors, annotate)``, as Arrow; in at most ``tasks`` tasks."""
        self.prepare(annotate)
        # A handful of states (one task) in the first file, whose partition alone runs: splitting
        # them over files costs a small level more than it saves.
        self._write(frontier, split=tasks is None or tasks > 1)
        if self.switched:
            return self._run_switched(annotate, tasks)
        if self._cache_rdd is not None:
            # Drop the last level's parsed frontier: the job parses the new files (once each) and caches them.
            self._cache_rdd.unpersist(True)
            self._cache_rdd.persist(self._cache_level)
        elif not self._fresh:
            raise HeldPlanUnavailable(f"held expansion: the cached frontier {self.view} is not among Spark's persisted RDDs")
        out = self._job(annotate, tasks)
        if self._fresh:
            self._fresh = False
            name = f"In-memory table {self.view}"
            found = [r for r in self.spark.sparkContext._jsc.getPersistentRDDs().values() if r.name() == name]
            if len(found) != 1:
                raise HeldPlanUnavailable(f"held expansion: expected one persisted RDD named {name!r}, found {len(found)}")
            self._cache_rdd = found[0]
            self._cache_level = self._cache_rdd.getStorageLevel()
        return out

    def rows(self, frontier: pa.Table) -> DataFrame | None:
        """``frontier`` (rows of the leaf's columns) written to the files and read as a DataFrame of
        a partition a file, read when its job runs (checkpoint it before the files are written
        again); None unless ``switched`` and planned (``prepare``)."""
        if not self.switched or self.layout is None:
            return None
        self._write(frontier)
        return rows_frame(self.spark, self._files(), nullable(self.leaf_schema))

    def shared_union(self, parts: int, schema: StructType) -> tuple | None:
        """(the leaf's ``SwitchRows``, the actions' union by part over it) for the Spark levels' held
        plan (``HeldRows``) over frontiers of ``parts`` partitions whose rows begin with ``schema``'s
        columns: one union of the actions a run, analyzed, optimized and its code generated once for
        the small levels and the Spark levels, whichever comes first (planned again for the first
        Spark level, it would take the driver's time with no job running). None unless switched,
        over the same columns and as many partitions, and by part; raises HeldPlanUnavailable for a
        union that cannot be run again."""
        if not self.switched or parts != self.parts or nullable(schema).json() != nullable(self.leaf_schema).json():
            return None
        if self.layout is None:
            self._by_part(self._switched_union())
        return (self._switch, self._by_part_frame) if self.layout == "by part" else None

    def _run_switched(self, annotate: bool, tasks: int | None) -> pa.Table:
        """The held plan's job over the files just written, each decoded once a task: the leaf
        points at the files' RDD, and a task's first read of a file keeps its rows for the task's
        other branches (``SwitchRows.retargetOnce``), not a fresh RDD persisted for the job: Spark's
        block manager samples the rows' sizes as they go in, and the tasks pay for it."""
        self._switch.retargetOnce(self._files())
        self._job_ok = False
        out = self._job(annotate, tasks)
        self._job_ok = True
        return out

    def cache_rdd_id(self) -> int | None:
        return int(self._cache_rdd.id()) if self._cache_rdd is not None else None

    @staticmethod
    def check_parents(successors: pa.Table, frontier: pa.Table) -> None:
        parents = pa.table({"_fp": successors["_parent_fp"], "_fp2": successors["_parent_fp2"]})
        known = pa.table({"_fp": frontier["_fp"], "_fp2": frontier["_fp2"]})
        if parents.num_rows and parents.join(known, ["_fp", "_fp2"], join_type="left anti").num_rows:
            raise RuntimeError("successors of states that are not the frontier's: the held expansion read "
                               "stale data (run with SSE_FIXED_PLAN=0 and report it)")

    def close(self, park: str | None = None) -> None:
        """Let the plans go, or (``park``: the seen filter name they test) park them (``park``)."""
        if park is not None:
            self.park(park)
        if self._plans and not self.switched:
            try:
                self.spark.catalog.uncacheTable(self.view)
                self.spark.catalog.dropTempView(self.view)
            except Exception:  # the session may be gone; nothing of the run depends on it
                pass
        self._plans, self._frames, self._cache_rdd = {}, {}, None
        self._empty.clear()
        self._switch = self._files_rdd = self._union = self._by_part_frame = None
        shutil.rmtree(self.folder, ignore_errors=True)
        try:
            self.folder.parent.rmdir()  # the run's _frontier folder, when nothing else is in it
        except OSError:
            pass
