"""The engine on a toy model, against an independent breadth-first search written in Python
with TLC's semantics (state constraint, invariants on every new successor, deadlock)."""
import json

import pyarrow as pa
import pytest

from deltalake import DeltaTable

from engine.settings import Settings

from conftest import TEST_MODELS, run_cli, seen_index_everywhere, setting_args


def bfs(steps, max_, limit=99, cap=99, deadlock=True):
    def inv(s):
        return s[0] <= limit

    def in_model(s):
        return s[0] < cap

    def succ(s):
        x, vis = s
        return [(x + d, tuple(sorted(set(vis) | {x + d}))) for d in sorted(steps) if x + d <= max_]

    init = (0, (0,))
    generated = 1
    if not inv(init):
        return {"result": "invariant_violated", "trace_length": 1}
    seen = {init} if in_model(init) else set()
    frontier = [init] if in_model(init) else []
    depth = 1 if frontier else 0
    while frontier:
        nxt = []
        for s in frontier:
            ss = succ(s)
            if not ss and deadlock:
                return {"result": "deadlock", "trace_length": depth, "last_x": s[0]}
            for t in ss:
                generated += 1
                if t in seen:
                    continue
                if not inv(t):
                    return {"result": "invariant_violated", "trace_length": depth + 1}
                if in_model(t):
                    seen.add(t)
                    nxt.append(t)
        if nxt:
            depth += 1
        frontier = nxt
    return {"result": "ok", "distinct": len(seen), "generated": generated, "depth": depth}


def check(capsys, tmp_path, *args, settings=None):
    code, out, err = run_cli(capsys, "--models", str(TEST_MODELS), *setting_args(**(settings or {})), "check",
                             "counter", "--warehouse", str(tmp_path / "wh"), "--json", *args)
    assert out.strip(), err
    return code, json.loads(out), err


def test_complete_search_matches_reference(capsys, tmp_path):
    code, res, err = check(capsys, tmp_path, "--config", "no_deadlock", "--set", "Steps=1,2", "--set", "Max=6")
    want = bfs({1, 2}, 6, deadlock=False)
    assert code == 0, err
    assert (res["result"], res["distinct_states"], res["states_generated"], res["depth"]) == \
        ("ok", want["distinct"], want["generated"], want["depth"])
    assert res["trace"] == []
    assert DeltaTable(res["tables"]["states"]).to_pyarrow_table().num_rows == want["distinct"]
    assert "Progress(" in err


def test_state_constraint_follows_tlc(capsys, tmp_path):
    code, res, _ = check(capsys, tmp_path, "--config", "no_deadlock", "--set", "Steps=1,3",
                         "--set", "Max=9", "--set", "Cap=6")
    want = bfs({1, 3}, 9, cap=6, deadlock=False)
    assert code == 0
    assert (res["distinct_states"], res["states_generated"], res["depth"]) == \
        (want["distinct"], want["generated"], want["depth"])


def test_deadlock_is_found_with_shortest_trace(capsys, tmp_path):
    code, res, _ = check(capsys, tmp_path, "--set", "Steps=1,2", "--set", "Max=5")
    want = bfs({1, 2}, 5)
    assert code == 11
    assert res["result"] == "deadlock" and res["violated_invariant"] is None
    assert len(res["trace"]) == want["trace_length"]
    assert res["trace"][0]["action"] == "Init"
    assert res["trace"][-1]["state"]["x"] == want["last_x"]


def test_no_deadlock_flag_turns_deadlock_checking_off(capsys, tmp_path):
    code, res, _ = check(capsys, tmp_path, "--no-deadlock", "--set", "Steps=1,2", "--set", "Max=5")
    assert code == 0 and res["result"] == "ok"
    assert res["distinct_states"] == bfs({1, 2}, 5, deadlock=False)["distinct"]


def test_invariant_violation_stops_at_shallowest_level(capsys, tmp_path):
    code, res, err = check(capsys, tmp_path, "--no-deadlock", "--set", "Steps=1,2", "--set", "Max=8",
                           "--set", "Limit=5")
    want = bfs({1, 2}, 8, limit=5, deadlock=False)
    assert code == 12
    assert res["result"] == "invariant_violated" and res["violated_invariant"] == "Bounded"
    assert len(res["trace"]) == want["trace_length"]
    assert [t["action"] for t in res["trace"]][0] == "Init"
    assert res["trace"][-1]["state"]["x"] > 5
    # each step is a real successor of the one before: x grows by a step in {1, 2}
    xs = [t["state"]["x"] for t in res["trace"]]
    assert all(b - a in (1, 2) for a, b in zip(xs, xs[1:]))
    trace_rows = DeltaTable(res["tables"]["trace"]).to_pyarrow_table().to_pylist()
    assert [r["x"] for r in sorted(trace_rows, key=lambda r: r["step"])] == xs


def test_text_output_marks_changed_variables(capsys, tmp_path):
    code, out, _ = run_cli(capsys, "--models", str(TEST_MODELS), "check", "counter", "--warehouse",
                           str(tmp_path / "wh"), "--set", "Max=3", "--set", "Steps=1")
    assert code == 11
    assert "Error: Deadlock reached." in out
    assert "State 1: <Initial predicate>" in out and "State 4: <Step>" in out
    assert "*/\\ x = 1" in out and " /\\ x = 0" in out


def test_completed_run_is_not_recomputed(capsys, tmp_path):
    args = ("--config", "no_deadlock", "--set", "Max=4")
    _, first, _ = check(capsys, tmp_path, *args)
    _, again, _ = check(capsys, tmp_path, *args)
    assert again["from_cache"] is True
    assert again["distinct_states"] == first["distinct_states"]
    _, fresh, _ = check(capsys, tmp_path, *args, "--fresh")
    assert fresh["from_cache"] is False and fresh["distinct_states"] == first["distinct_states"]


def test_levels_split_over_many_partitions_give_the_same_search(capsys, tmp_path, monkeypatch, spark):
    """A level's shuffles get a partition per ``rows_per_partition`` successors; at one successor a
    partition the counts, depth and shortest trace are unchanged, and the session's setting is
    restored afterwards."""
    before = spark.conf.get("spark.sql.shuffle.partitions")
    one = {"rows_per_partition": 1, "level_path": "spark"}
    code, res, _ = check(capsys, tmp_path, "--no-deadlock", "--set", "Steps=1,2", "--set", "Max=8",
                         "--set", "Limit=5", settings=one)
    want = bfs({1, 2}, 8, limit=5, deadlock=False)
    assert code == 12 and len(res["trace"]) == want["trace_length"]
    code, res, _ = check(capsys, tmp_path, "--config", "no_deadlock", "--set", "Steps=1,2", "--set", "Max=6",
                         settings=one)
    want = bfs({1, 2}, 6, deadlock=False)
    assert (res["distinct_states"], res["states_generated"], res["depth"]) == \
        (want["distinct"], want["generated"], want["depth"])
    assert spark.conf.get("spark.sql.shuffle.partitions") == before


def test_seen_index_gives_the_same_search(capsys, tmp_path, monkeypatch, spark):
    """Above ``index_from`` seen states a level is anti-joined against the cached, hash-partitioned seen
    index (engine.search.seen) instead of the stored files. Used from the first level, merged as levels
    come, with at most 3 fingerprints a partition's sorted run (so the index is partitioned anew
    as levels grow), the counts, depth and shortest trace are those of the reference search. Every
    path to a counter state has the same length, so no state is met again at a later level: that the
    index finds old states is tested on ledger chaining (tests/test_ledger_chaining.py)."""
    import engine.accel.seen_index as seen
    calls = []
    for name in ("unseen", "unseen_table"):  # (a level in Spark, a level on the driver)
        real = getattr(seen.SeenIndex, name)
        monkeypatch.setattr(seen.SeenIndex, name,
                            lambda self, states, real=real: calls.append(1) or real(self, states))
    index, parts = seen_index_everywhere(monkeypatch, rows_per_partition=3, run_max=3)
    code, res, _ = check(capsys, tmp_path, "--config", "no_deadlock", "--set", "Steps=1,2", "--set", "Max=6",
                         settings=index)
    want = bfs({1, 2}, 6, deadlock=False)
    assert (res["distinct_states"], res["states_generated"], res["depth"]) == \
        (want["distinct"], want["generated"], want["depth"])
    assert len(calls) == want["depth"]  # every level expanded, the last one included
    assert parts == sorted(parts) and parts  # partitioned anew as the levels grew
    code, res, _ = check(capsys, tmp_path, "--no-deadlock", "--set", "Steps=1,2", "--set", "Max=8",
                         "--set", "Limit=5", settings=index)
    want = bfs({1, 2}, 8, limit=5, deadlock=False)
    assert code == 12 and len(res["trace"]) == want["trace_length"]


@pytest.mark.long
def test_levels_on_the_driver_or_in_spark_give_the_same_search(capsys, tmp_path, monkeypatch, spark):
    """A small level is finished on the driver as Arrow (engine.search.arrow_level), a large one by Spark
    jobs. Every level in Spark (anti-joined and ordered on the driver, its picked rows fetched by
    broadcast joins; or, as for the largest levels, anti-joined, ordered and validated by the suite in
    Spark and its rows fetched by shuffled joins), levels alternating between the two (so each path starts from the
    other's stored level and seen states), and every level on the driver with the constraint and
    invariants evaluated on the new states in a job of their own (as for large levels) give the
    reference's counts, deadlock and violation. Over the same large levels with repeats blanked in the
    actions' job (``annotate_blanked_inline``), the invariants stay in that job: no second job.
    Driver levels run the union planned once per run (engine.search.expand.HeldExpansion), or with
    ``fixed_plan`` off the union planned again for each level: both give the same search. Small
    levels' jobs run interpreted (``interpret_below``), the alternating variant's compiled: the same
    search. In the alternating variant each Spark level reads its
    frontier from the driver's copy of the level before (``_driver_frontier``)."""
    import engine.accel.search as checker
    import engine.accel.held as expand
    held_calls, copies, annotated, shared = [], [], [], []
    real_successors, real_rows = expand.HeldExpansion.successors, expand.HeldExpansion.rows
    real_shared = expand.HeldExpansion.shared_union
    monkeypatch.setattr(expand.HeldExpansion, "shared_union",
                        lambda self, *a: shared.append(real_shared(self, *a)) or shared[-1])
    monkeypatch.setattr(expand.HeldExpansion, "successors",
                        lambda self, *a, **k: held_calls.append(1) or real_successors(self, *a, **k))

    def rows(self, *a, **k):
        got = real_rows(self, *a, **k)
        copies.extend([] if got is None else [got])
        return got
    monkeypatch.setattr(expand.HeldExpansion, "rows", rows)
    real_annotate = checker.AcceleratedSearch._annotate_arrow
    monkeypatch.setattr(checker.AcceleratedSearch, "_annotate_arrow",
                        lambda self, *a, **k: annotated.append(1) or real_annotate(self, *a, **k))
    auto = spark.conf.get("spark.sql.autoBroadcastJoinThreshold")
    try:
        for tag, settings in (
                ("spark", {"level_path": "spark"}),
                ("spark_shuffled", {"level_path": "spark", "broadcast_rows": 0, "narrow_on_driver": 0}),
                ("alternating", {"level_path": "alternate", "interpret_below": -1}),
                ("annotated_after", {"level_path": "driver", "inline_annotation": 0,
                                     "annotate_blanked_inline": False}),
                ("blanked_inline", {"level_path": "driver", "inline_annotation": 0}),
                ("per_level_plan", {"level_path": "driver", "fixed_plan": False})):
            for spied in (held_calls, copies, annotated, shared):
                spied.clear()
            # Spark would broadcast so small a table of its own accord: not in the shuffled variant.
            spark.conf.set("spark.sql.autoBroadcastJoinThreshold",
                           "-1" if settings.get("broadcast_rows") == 0 else auto)
            code, res, err = check(capsys, tmp_path / tag, "--config", "no_deadlock", "--set", "Steps=1,3",
                                   "--set", "Max=9", "--set", "Cap=6", settings=settings)
            want = bfs({1, 3}, 9, cap=6, deadlock=False)
            assert code == 0, err
            assert "planning each level" not in err  # the held plan did not fall back
            assert (res["distinct_states"], res["states_generated"], res["depth"]) == \
                (want["distinct"], want["generated"], want["depth"])
            code, res, _ = check(capsys, tmp_path / tag, "--set", "Steps=1,2", "--set", "Max=5", settings=settings)
            assert code == 11 and len(res["trace"]) == bfs({1, 2}, 5)["trace_length"]
            code, res, _ = check(capsys, tmp_path / tag, "--no-deadlock", "--set", "Steps=1,2", "--set", "Max=8",
                                 "--set", "Limit=5", settings=settings)
            assert code == 12 and len(res["trace"]) == bfs({1, 2}, 8, limit=5, deadlock=False)["trace_length"]
            # Driver levels used the held plan unless it was turned off; Spark levels never do.
            assert bool(held_calls) == (tag in ("alternating", "annotated_after", "blanked_inline")), \
                (tag, len(held_calls))
            # Invariants in a second job only when a large driver level's repeats are not blanked.
            assert bool(annotated) == (tag == "annotated_after"), (tag, len(annotated))
            # A Spark level after a driver level reads its frontier from the driver's copy.
            assert bool(copies) == (tag == "alternating"), (tag, len(copies))
            # Spark levels hold the small levels' union (its leaf, its branches' code), planned once
            # a run by whichever level comes first (here a Spark level: the initial states' level).
            used = [x is not None for x in shared]
            assert (used and all(used)) if tag in ("spark", "spark_shuffled", "alternating") else not used, (tag, used)
    finally:
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", auto)


def test_held_expansion_refuses_successors_of_another_level():
    """Successors whose parents are not the frontier just written (stale data) are an error, not a
    wrong search."""
    import pyarrow as pa
    import pytest
    from engine.accel.held import HeldExpansion
    frontier = pa.table({"_fp": [1, 2], "_fp2": [10, 20]})
    HeldExpansion.check_parents(pa.table({"_parent_fp": [1, 2, 2], "_parent_fp2": [10, 20, 20]}), frontier)
    HeldExpansion.check_parents(pa.table({"_parent_fp": pa.array([], pa.int64()),
                                          "_parent_fp2": pa.array([], pa.int64())}), frontier)
    with pytest.raises(RuntimeError, match="stale data"):
        HeldExpansion.check_parents(pa.table({"_parent_fp": [1, 3], "_parent_fp2": [10, 30]}), frontier)


@pytest.mark.parametrize("binary,switched", [(True, False),
                                             pytest.param(True, True, marks=pytest.mark.long),
                                             pytest.param(False, False, marks=pytest.mark.long)],
                         ids=["arrow", "arrow over SwitchRows", "json"])
def test_held_expansion_runs_each_new_frontier(spark, tmp_path, monkeypatch, binary, switched):
    """The union planned once (engine.search.expand.HeldExpansion) and run again over frontier A, then B, then
    A gives, each time, what the union planned afresh over that frontier gives: the same successors,
    fingerprints and keys, with the frontier in one file or several, in one task or a task a file,
    written as Arrow IPC streams (the engine's JVM reader) or as JSON (without it), and read through
    a cached view or (``switched``) a ``SwitchRows`` leaf pointed at each level's files, as the Spark
    levels' held plan reads its frontiers. The frontiers hold
    what a JSON round trip could get wrong: quotes, backslashes, newlines and non-ASCII text in
    strings, empty strings and arrays, a null struct, fingerprints at the ends of the 64-bit range. A
    schema that JSON cannot carry exactly is held only as Arrow. Over ``SwitchRows`` a task's first
    read of a file keeps its rows for the task's other branches (``SwitchRows.retargetOnce``): a
    leaf that kept them past the task (across jobs) would give frontier A's successors for B."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import DoubleType, LongType, StructField, StructType
    from engine.accel.held import HeldExpansion
    from engine.search.expand import compile_model
    from engine.search.encoding import fingerprint_sql
    from engine.model.loader import load_model
    from engine.runtime.session import declare_constants
    model = load_model("tokens", TEST_MODELS)
    declare_constants(spark, model, {"Procs": ["p1", "p2", "p3"], "Max": 2, "LogLen": 3})
    cm = compile_model(spark, model)
    fp1, fp2 = fingerprint_sql([(f.name, f.dataType) for f in cm.schema.fields], using="row-bytes")

    def finish(union, annotate):
        return union.coalesce(2).selectExpr("*", f"{fp1} AS _fp", f"{fp2} AS _fp2")

    columns = StructType([*cm.schema.fields, StructField("_ord", LongType()),
                          StructField("_fp", LongType()), StructField("_fp2", LongType())])
    schema = to_arrow_schema(columns)
    a = pa.Table.from_pylist([
        {"cnt": [0, 1, 2], "owner": "", "log": [], "done": [], "last": None,
         "_ord": 0, "_fp": -(2 ** 63), "_fp2": 2 ** 63 - 1},
        {"cnt": [1, 0, 0], "owner": 'p"2\\\n\u00e9', "log": ["p1", "x,]}"], "done": ["p1"],
         "last": {"who": None, "n": 1}, "_ord": 1, "_fp": 5, "_fp2": -5},
    ], schema=schema)
    b = pa.Table.from_pylist([{"cnt": [2, 2, 0], "owner": "p3", "log": ["p3"], "done": ["p3"],
                               "last": {"who": "p1", "n": 2}, "_ord": 7, "_fp": 11, "_fp2": 12}], schema=schema)

    def as_frontier(df):
        return df.selectExpr(*[f"`{f.name}`" for f in cm.schema.fields],
                             "named_struct('fp', _fp, 'fp2', _fp2, 'ord', _ord) AS _parent")

    def fresh(frontier):
        return finish(cm.successors(spark, as_frontier(spark.createDataFrame(frontier))), False).toArrow()

    switch = {"columns": columns, "union_over": lambda leaf: cm.successors(spark, as_frontier(leaf))} if switched else {}

    def rows(t):
        return sorted(t.to_pylist(), key=lambda r: (r["_parent_ord"], r["_key"], r["_fp"]))

    # One file, two (B's one state leaves one empty) and three: each task runs every action over
    # its own file; or (by_part off) one file and the union's partitions coalesced into two tasks.
    for by_part, parts, layout in ((True, 1, "by part"), (True, 2, "by part"), (True, 3, "by part"),
                                   (False, 2, "coalesced")):
        held = HeldExpansion(spark, cm, tmp_path / "_frontier" / "leaf", finish, "test_held_frontier",
                             parts=parts, tasks=2, binary=binary, settings=Settings(by_part=by_part), **switch)
        assert held.switched == switched
        try:
            for frontier in (a, b, a):
                for tasks in (1, None):
                    got = held.successors(frontier, False, tasks=tasks)
                    assert got.num_rows > 0
                    assert rows(got) == rows(fresh(frontier))
            assert held.layout == layout
            assert sorted(p.name for p in (tmp_path / "_frontier" / "leaf").iterdir()) == \
                [f"part-{j:05d}.{'arrow' if binary else 'json'}" for j in range(parts if by_part else 1)]
        finally:
            held.close()
        assert not (tmp_path / "_frontier").exists()
    assert HeldExpansion.binary_available(spark)
    assert HeldExpansion.supports(cm.schema, binary)
    assert HeldExpansion.supports(StructType([StructField("x", DoubleType())]), binary) == binary


def test_small_and_spark_levels_share_the_actions_generated_code(spark, tmp_path):
    """The small levels' held union (``HeldExpansion`` over a ``SwitchRows`` leaf) and the Spark
    levels' (``HeldRows``), over the same columns, are one query: Spark generates the same Java source
    for every action's stages in both, so Janino's cache (keyed by the source) gives the second plan
    the first one's classes, and the JIT compiles them once. Planned and run, the second plan
    compiles no source of its own for the actions."""
    from pyspark.sql.types import BooleanType, LongType, StructField, StructType
    from engine.accel.held import HeldExpansion, HeldRows, union_by_part
    from engine.search.expand import compile_model
    from engine.model.loader import load_model
    from engine.accel.spark import checkpoint
    from engine.runtime.session import declare_constants
    model = load_model("tokens", TEST_MODELS)
    declare_constants(spark, model, {"Procs": ["p1", "p2", "p3"], "Max": 2, "LogLen": 3})
    cm = compile_model(spark, model)
    columns = StructType([*cm.schema.fields, *(StructField(c, LongType()) for c in ("_ord", "_fp", "_fp2")),
                          StructField("_in_model", BooleanType())])

    def union_over(leaf):
        return cm.successors(spark, leaf.where("_in_model").selectExpr(
            *[f"`{f.name}`" for f in cm.schema.fields], "named_struct('fp', _fp, 'fp2', _fp2, 'ord', _ord) AS _parent"))

    def sources(df):
        seq = spark._jvm.org.apache.spark.sql.execution.debug.package.codegenStringSeq(
            df._jdf.queryExecution().executedPlan())
        return sorted(seq.apply(i)._2() for i in range(seq.size()))

    def compiled():
        return int(spark._jvm.org.apache.spark.metrics.source.CodegenMetrics.METRIC_COMPILATION_TIME().getCount())

    small = HeldExpansion(spark, cm, tmp_path / "_frontier" / "leaf", lambda union, annotate: union,
                          "test_shared_frontier", parts=2, tasks=2, columns=columns, union_over=union_over)
    try:
        small.prepare(False)
        state = {"cnt": [0, 1, 2], "owner": "", "log": [], "done": [], "last": None}
        table = pa.Table.from_pylist([{**state, "_ord": 0, "_fp": 1, "_fp2": 2, "_in_model": True}],
                                     schema=small.arrow_schema)
        assert small.successors(table, False).num_rows > 0  # (its classes compiled)
        held = HeldRows(spark, 2, columns)
        union = union_over(held.leaf)
        assert sources(union) == sources(small._union) and len(sources(union)) >= len(cm.action_names)
        frontier = checkpoint(spark.createDataFrame([{**state, "_ord": 0, "_fp": 1, "_fp2": 2, "_in_model": True}],
                                                    columns).repartition(2))
        before = compiled()
        held.hold(union_by_part(spark, union))
        # (the held plan's own RDD counted: no query of its own to plan and compile)
        assert held.run(frontier)._jdf.queryExecution().analyzed().rdd().count() > 0
        assert compiled() == before
    finally:
        small.close()


def test_spark_levels_run_every_action_by_part_over_a_held_plan(spark, monkeypatch):
    """A Spark level's frontier comes in a partition per core of about equal stored size
    (``balanced``: the checkpoint's partitions grouped, no shuffle), the actions' union runs a task
    per frontier partition, every action in it (``union_by_part``), and that union is planned once
    (``HeldRows``) and run again over each new frontier: over frontier A, then B, then A it gives
    what the union planned afresh over each gives. A frontier of another number of partitions is
    refused, naming both numbers. The branches' code generated on two threads or on one
    (the setting ``planning_threads``) gives each partition the same rows."""
    import pytest
    from pyspark.errors import IllegalArgumentException
    from pyspark.sql import functions as F
    from engine.accel.search import _checkpoint_rdd_id, balanced
    from engine.accel.held import HeldRows, union_by_part
    from engine.search.expand import compile_model
    from engine.model.loader import load_model
    from engine.accel.spark import checkpoint
    from engine.runtime.session import declare_constants
    model = load_model("tokens", TEST_MODELS)
    declare_constants(spark, model, {"Procs": ["p1", "p2", "p3"], "Max": 2, "LogLen": 3})
    cm = compile_model(spark, model)
    names = [f.name for f in cm.schema.fields]

    def as_frontier(df):
        return df.selectExpr(*[f"`{n}`" for n in names], "named_struct('fp', _fp, 'fp2', _fp2, 'ord', _ord) AS _parent")

    # Six partitions of 10, 1000, 50, 3000, 5 and 200 states (states repeat: only their number matters).
    sizes = [10, 1000, 50, 3000, 5, 200]
    seeds = [(["p1"], "p1"), (["p2", "p1"], "p2"), ([], "")]
    data = [(p, i) for p, n in enumerate(sizes) for i in range(n)]
    base = spark.createDataFrame(spark.sparkContext.parallelize(data, len(sizes)).partitionBy(
        len(sizes), lambda p: p).map(lambda kv: kv), "p int, i int")
    a = checkpoint(base.selectExpr(
        "array(i % 3, 1, 0) AS cnt", "IF(i % 2 = 0, 'p1', '') AS owner", "array() AS log", "array() AS done",
        "CAST(NULL AS struct<who:string, n:int>) AS last", "CAST(p * 10000 + i AS BIGINT) AS _ord",
        "CAST(i AS BIGINT) AS _fp", "CAST(-i AS BIGINT) AS _fp2").selectExpr(
        *[f"CAST(`{f.name}` AS {f.dataType.simpleString()}) AS `{f.name}`" for f in cm.schema.fields],
        "_ord", "_fp", "_fp2"))
    grouped = balanced(a, 2)
    counts = sorted(r["count"] for r in grouped.groupBy(F.spark_partition_id()).count().collect())
    assert counts == [1265, 3000]  # largest first into the lighter group: {3000}, {1000, 200, 50, 10, 5}
    assert sorted(map(tuple, grouped.collect())) == sorted(map(tuple, a.collect()))
    b = checkpoint(a.where("_ord % 7 = 0").selectExpr(*[c for c in a.columns]).repartition(2, "_ord"))
    assert _checkpoint_rdd_id(b) is not None
    b = balanced(b, 2)  # (no more partitions than asked for: the same rows, a plan of their own)

    def fresh(frontier):
        return cm.successors(spark, as_frontier(frontier))

    def rows(df):
        return sorted(map(tuple, df.selectExpr("to_json(struct(*)) AS j").collect()))

    import engine.accel.held as expand
    pools = []
    real_pool = expand.ThreadPoolExecutor
    monkeypatch.setattr(expand, "ThreadPoolExecutor", lambda n: pools.append(n) or real_pool(n))
    by_partition = {}
    for threads in (1, 2):
        by_part = union_by_part(spark, fresh(grouped), threads=threads)
        assert by_part is not None and int(by_part._jdf.queryExecution().analyzed().rdd().getNumPartitions()) == 2
        assert rows(by_part) == rows(fresh(grouped))
        by_partition[threads] = sorted(map(tuple, by_part.selectExpr(
            "spark_partition_id() AS p", "to_json(struct(*)) AS j").collect()))
        assert pools == ([] if threads == 1 else [2])  # the tokens model's three actions, two at a time
    assert by_partition[1] == by_partition[2] and {p for p, _ in by_partition[2]} == {0, 1}
    held = HeldRows(spark, 2, grouped.schema)
    union = union_by_part(spark, fresh(held.leaf))
    held.hold(union)
    for frontier in (grouped, b, grouped):
        got = held.run(frontier)
        assert got.count() > 0
        assert rows(got) == rows(fresh(frontier))
    with pytest.raises(IllegalArgumentException, match="SwitchRows: the target has 6 partitions, this 2"):
        held.run(a)


def test_interpreted_block_restores_the_session(spark):
    """``interpreted`` turns code generation off for the jobs in the block and gives the session its
    settings back after it, an error included."""
    import pytest
    from engine.accel.search import interpreted
    spark.conf.set("spark.sql.codegen.wholeStage", "true")
    with interpreted(spark):
        assert spark.conf.get("spark.sql.codegen.wholeStage") == "false"
        assert spark.conf.get("spark.sql.codegen.factoryMode") == "NO_CODEGEN"
        assert spark.sql("SELECT sum(id * 2) AS s FROM range(10)").collect()[0]["s"] == 90
    assert spark.conf.get("spark.sql.codegen.wholeStage") == "true"
    assert spark.conf.get("spark.sql.codegen.factoryMode") == "FALLBACK"
    with pytest.raises(ZeroDivisionError):
        with interpreted(spark):
            1 / 0
    assert spark.conf.get("spark.sql.codegen.factoryMode") == "FALLBACK"
    with interpreted(spark, on=False):
        assert spark.conf.get("spark.sql.codegen.wholeStage") == "true"


@pytest.mark.parametrize("session_mode", [None, "FALLBACK"], ids=["unset", "set"])
def test_small_levels_build_task_projections_interpreted(capsys, tmp_path, monkeypatch, spark, session_mode):
    """A small level's job (one task) runs with the projections Spark makes inside tasks interpreted
    (checker.FACTORY_MODE): the held plan's code is made, but each task generated those projections'
    source anew. Larger levels' jobs keep the session's setting, and the search gives it back
    (unset, or as the session had it), with the reference search's states."""
    import engine.accel.search as checker
    want = bfs({1, 2}, 9, deadlock=False)
    modes = []
    real = checker.HeldExpansion.successors

    def successors(self, frontier, annotate, tasks=None):
        modes.append((tasks, spark.conf.get(checker.FACTORY_MODE, None)))
        return real(self, frontier, annotate, tasks)

    monkeypatch.setattr(checker.HeldExpansion, "successors", successors)
    if session_mode is None:
        spark.conf.unset(checker.FACTORY_MODE)
    else:
        spark.conf.set(checker.FACTORY_MODE, session_mode)
    try:
        # levels of up to 60 successors are small
        code, res, err = check(capsys, tmp_path, "--config", "no_deadlock", "--set", "Steps=1,2", "--set", "Max=9",
                               settings={"interpret_below": 60})
        assert code == 0, err
        assert (res["distinct_states"], res["states_generated"], res["depth"]) == \
            (want["distinct"], want["generated"], want["depth"])
        assert {tasks for tasks, _ in modes} == {1, None}  # small levels and larger ones
        assert all(mode == ("NO_CODEGEN" if tasks == 1 else session_mode) for tasks, mode in modes)
        assert spark.conf.get(checker.FACTORY_MODE, None) == session_mode
    finally:
        spark.conf.unset(checker.FACTORY_MODE)


def test_a_kept_level_is_planned_afresh(spark):
    """A level finished by Spark keeps its checkpointed new states as the next frontier. A checkpoint's
    plan remembers the query that made it (its constraints, statistics, and through them the level
    before's): carried from level to level that chain grew until a ledger chaining level's jobs took a
    minute and the heap ran out. The frontier is planned over the checkpoint's rows alone: the same
    rows and RDD, none of the origin's constraints."""
    from engine.accel.search import _checkpoint_rdd_id, _unplanned
    made = spark.range(100).where("id % 3 = 0").selectExpr("id", "id * 2 AS y").localCheckpoint(eager=True)
    fresh = _unplanned(made)

    def constraints(df):
        return int(df._jdf.queryExecution().optimizedPlan().constraints().size())

    assert constraints(made) > 0
    assert constraints(fresh) == 0
    assert _checkpoint_rdd_id(fresh) == _checkpoint_rdd_id(made) is not None
    assert sorted(r["y"] for r in fresh.collect()) == [i * 2 for i in range(0, 100, 3)]


def test_checkpoints_are_serialized(spark):
    """A level's checkpoints (bookkeeper's largest: 2.5 to 3 GB) are kept serialized, in memory and on
    disk beyond it, not as row objects the JVM's collector traces at every full collection."""
    from engine.accel.search import _checkpoint_rdd_id
    from engine.accel.spark import checkpoint
    made = checkpoint(spark.range(1000).selectExpr("id", "id * 2 AS y"))
    level = spark.sparkContext._jsc.getPersistentRDDs()[_checkpoint_rdd_id(made)].getStorageLevel()
    assert (level.useMemory(), level.useDisk(), level.deserialized()) == (True, True, False)
    assert made.selectExpr("sum(y)").first()[0] == 999 * 1000
    default = spark.range(10).localCheckpoint(eager=True)
    assert spark.sparkContext._jsc.getPersistentRDDs()[_checkpoint_rdd_id(default)].getStorageLevel().deserialized()


def test_a_checkpoints_partitions_run_largest_first(spark):
    """A large level's successors are read with their partitions in decreasing size (Spark runs a job's
    tasks in partition order: a large partition last ran alone on one core), the same rows."""
    from pyspark.sql import functions as F

    from engine.accel.search import largest_first
    from engine.accel.spark import checkpoint
    sizes = [10, 1000, 50, 3000, 5, 200]
    rows = spark.sparkContext.parallelize([(p, i) for p, n in enumerate(sizes) for i in range(n)], len(sizes))
    made = checkpoint(spark.createDataFrame(rows.partitionBy(len(sizes), lambda p: p).map(lambda kv: kv),
                                            "p int, i int"))

    def counts(df):
        got = df.withColumn("pid", F.spark_partition_id()).groupBy("pid").count().collect()
        return [c for _, c in sorted((r["pid"], r["count"]) for r in got)]

    assert counts(made) == sizes
    ordered = largest_first(made)
    assert counts(ordered) == sorted(sizes, reverse=True)
    assert sorted(map(tuple, ordered.collect())) == sorted(map(tuple, made.collect()))
    # A frame that is not a checkpoint, or one with no more partitions than cores: left as it is.
    plain = spark.range(0, 10, 1, 4)
    few = checkpoint(spark.range(0, 10, 1, spark.sparkContext.defaultParallelism))
    assert largest_first(plain) is plain and largest_first(few) is few


def test_actions_that_shuffle_are_planned_each_level(capsys, tmp_path, test_models_copy):
    """A shuffle's output, a broadcast or a subquery's value is fixed the first time a plan runs:
    the union of actions planned once would read, level after level, what it read over the first
    frontier. An action with one (here a REPARTITION hint in Step) is planned again each level,
    and the search gives the reference's counts."""
    models = test_models_copy
    step = models / "actions_sql" / "counter" / "Step.sql"
    text = step.read_text()
    assert "SELECT * FROM choices WHERE" in text
    step.write_text(text.replace("SELECT * FROM choices WHERE", "SELECT /*+ REPARTITION(3) */ * FROM choices WHERE"))
    code, out, err = run_cli(capsys, "--models", str(models), "check", "counter", "--warehouse", str(tmp_path / "wh"),
                             "--json", "--config", "no_deadlock", "--set", "Steps=1,2", "--set", "Max=7")
    res = json.loads(out)
    want = bfs({1, 2}, 7, deadlock=False)
    assert code == 0, err
    assert (res["distinct_states"], res["states_generated"], res["depth"]) == \
        (want["distinct"], want["generated"], want["depth"])
    assert "planning each level from the SQL text (held expansion: the actions' plan has AdaptiveSparkPlan, " \
           "Exchange, whose data" in err


def test_new_states_are_spread_only_where_their_partitions_are_uneven(capsys, tmp_path, monkeypatch):
    """A Spark level's new states, fetched by a broadcast join, stay in the partitions their parents
    were in unless those are uneven or not the next level's number (``needs_spread``): then they are
    spread by a hash of ``_ord`` (a shuffle). Left in place or spread, the search stores the same
    states with the same numbers and levels."""
    import engine.accel.search as checker
    assert checker.needs_spread([100, 100], 2) is False
    assert checker.needs_spread([100, 105], 2) is False  # 105 <= 1.05 * 102.5
    assert checker.needs_spread([100, 112], 2) is True   # 112 > 1.05 * 106
    assert checker.needs_spread([0, 0], 2) is False
    assert checker.needs_spread([50, 50], 4) is True      # the next level wants more partitions
    assert checker.needs_spread([10, 10, 10, 10], 2) is True
    want = bfs({1, 2}, 9, deadlock=False)
    decisions = []
    real = checker.needs_spread
    monkeypatch.setattr(checker, "needs_spread",
                        lambda found_in, parts, skew: decisions.append((list(found_in), parts,
                                                                        real(found_in, parts, skew)))
                        or decisions[-1][2])
    stored = {}
    for skew in (0.0, 1e9):  # every uneven level spread; only a change in the number of partitions
        decisions.clear()
        code, res, err = check(capsys, tmp_path / str(skew), "--config", "no_deadlock", "--set", "Steps=1,2",
                               "--set", "Max=9", settings={"arrow_level_bytes": 0, "spread_skew": skew})
        assert code == 0, err
        assert (res["distinct_states"], res["states_generated"], res["depth"]) == \
            (want["distinct"], want["generated"], want["depth"])
        assert len(decisions) >= want["depth"] - 2
        # the counts are those of the rows fetched: every new state of the level, once
        levels = DeltaTable(res["tables"]["levels"]).to_pyarrow_table().to_pylist()
        new_at = {r["depth"]: r["new_states"] for r in levels}
        assert [sum(f) for f, _, _ in decisions] == [new_at.get(d, 0) for d in range(2, 2 + len(decisions))]
        if skew == 0.0:
            assert all(spread == (len(f) != parts or len(set(f)) > 1) for f, parts, spread in decisions)
        else:
            assert not all(spread for _, _, spread in decisions)
            assert all(spread == (len(f) != parts) for f, parts, spread in decisions)
        states = DeltaTable(res["tables"]["states"])
        stored[skew] = sorted(tuple(r.values()) for r in states.to_pyarrow_table(
            columns=["x", "_depth", "_ord", "_fp", "_fp2"]).to_pylist())
    assert stored[0.0] == stored[1e9] and len(stored[0.0]) == want["distinct"]


@pytest.mark.parametrize("spark_levels", [False, True], ids=["driver levels", "Spark levels"])
def test_pipelined_commits_store_what_in_line_commits_store(capsys, tmp_path, monkeypatch, spark_levels):
    """A level validated, written and committed while the next one runs (settings.pipeline) leaves the
    same states, levels and Delta history as one finished in line, and its progress line follows
    its commit: levels finished on the driver, and levels Spark finishes (whose Parquet is written
    while the next level is planned). Small levels finished on the driver are validated in batches
    of consecutive levels (settings.validate_batch: one run of the suite a batch), each then written
    and committed in order, and all of them before a level that Spark finishes reads the store. A
    level Spark finished is written once the next Spark level's narrow columns are collected
    (settings.defer_write), or as it ends."""
    import engine.accel.search as checker
    from engine.search.invariants import InvariantSuite
    want = bfs({1, 2}, 9, deadlock=False)
    stored = {}
    persisted = []
    real_persist = checker.AcceleratedSearch._persist

    def persist(self, fig, stored_, validate, write):
        persisted.append((fig.depth, write is not None))
        calls.append(("persist", fig.depth))
        return real_persist(self, fig, stored_, validate, write)

    monkeypatch.setattr(checker.AcceleratedSearch, "_persist", persist)
    batches, suite_runs = [], []
    real_batch = checker.AcceleratedSearch._persist_batch

    def persist_batch(self, batch):
        batches.append([fig.depth for fig, _, _ in batch])
        return real_batch(self, batch)

    monkeypatch.setattr(checker.AcceleratedSearch, "_persist_batch", persist_batch)
    real_validate = InvariantSuite.validate_arrow

    def validate_arrow(self, table):
        suite_runs.append(table.num_rows)
        return real_validate(self, table)

    monkeypatch.setattr(InvariantSuite, "validate_arrow", validate_arrow)
    # Spark levels: the first reads its frontier from the store, the others the level before's kept
    # states, all through the union planned once (engine.search.expand.HeldRows).
    calls = []
    for name in ("hold", "run"):
        def spy(self, df, _real=getattr(checker.HeldRows, name), _name=name):
            calls.append(_name)
            return _real(self, df)
        monkeypatch.setattr(checker.HeldRows, name, spy)
    real_level = checker.AcceleratedSearch._spark_level

    def spark_level(self, *args):
        calls.append("level")
        return real_level(self, *args)

    monkeypatch.setattr(checker.AcceleratedSearch, "_spark_level", spark_level)
    for pipeline, batched in ((True, True), (True, False), (False, False)):
        # (defer_write both ways where pipelined)
        settings = {"pipeline": pipeline, "validate_batch": batched, "defer_write": batched, "validate_batch_levels": 4,
                    **({"arrow_level_bytes": 0} if spark_levels else {})}
        for spied in (persisted, calls, batches, suite_runs):
            spied.clear()
        code, res, err = check(capsys, tmp_path / f"{pipeline}{batched}", "--config", "no_deadlock", "--set", "Steps=1,2",
                               "--set", "Max=9", settings=settings)
        assert code == 0, err
        steps = [c for c in calls if isinstance(c, str)]
        if spark_levels:
            assert steps[:3] == ["level", "hold", "run"] and steps.count("hold") == 1
            assert steps.count("run") == steps.count("level") >= want["depth"] - 1
            # The k-th Spark level expands level k + 1 and finishes level k + 2 (the initial states are
            # finished on the driver). Deferred, that level is written during the next Spark level,
            # after its actions ran, and before the one after it starts (which it waits for).
            starts = [i for i, c in enumerate(calls) if c == "level"]
            if pipeline and batched:
                for k in range(len(starts) - 1):
                    written = calls.index(("persist", k + 2))
                    assert calls.index("run", starts[k + 1]) < written, calls
                    assert k + 2 >= len(starts) or written < starts[k + 2], calls
        else:
            assert steps == []
        if pipeline:  # every level with new states, by its kind's path (the initial states' on the driver)
            assert sorted(persisted) == [(1, False), *((d, spark_levels) for d in range(2, want["depth"] + 1))]
        else:
            assert persisted == []
        assert (res["distinct_states"], res["states_generated"], res["depth"]) == \
            (want["distinct"], want["generated"], want["depth"])
        states = DeltaTable(res["tables"]["states"])
        levels = DeltaTable(res["tables"]["levels"]).to_pyarrow_table().to_pylist()
        if batched:  # the driver's levels, consecutive, in order, at most 4 a batch, one run of the suite each
            assert [d for b in batches for d in b] == ([1] if spark_levels else list(range(1, want["depth"] + 1)))
            assert all(b == list(range(b[0], b[0] + len(b))) and len(b) <= 4 for b in batches)
            new_at = {r["depth"]: r["new_states"] for r in levels}
            runs = [sum(new_at[d] for d in b) for b in batches]
            if spark_levels:  # (Spark's levels validate their own states after it)
                assert suite_runs[:1] == runs == [new_at[1]]
            else:  # and the last level's, in line: it found no new state
                assert sorted(suite_runs) == sorted([*runs, 0]) and len(runs) < want["depth"]
        else:
            assert batches == []
        progress = [int(line.split(")")[0][len("Progress("):]) for line in err.splitlines()
                    if line.startswith("Progress(")]
        # one line a level, in order (the last expanded level, which found nothing new, too)
        assert progress == list(range(1, len(progress) + 1)) and len(progress) >= want["depth"]
        stored[(pipeline, batched)] = (
            sorted(tuple(r.values()) for r in states.to_pyarrow_table(columns=["x", "_depth", "_ord", "_fp", "_fp2"])
                   .to_pylist()),
            sorted((r["depth"], r["generated"], r["new_states"], r["distinct_total"]) for r in levels),
            [h["operation"] for h in states.history()],
            progress,
        )
    assert stored[(True, True)] == stored[(True, False)] == stored[(False, False)]
    assert len(stored[(True, True)][0]) == want["distinct"] and len(stored[(True, True)][1]) == want["depth"]
