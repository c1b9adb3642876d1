"""The engine on a toy model, against an independent breadth-first search written in Python
with TLC's semantics (state constraint, invariants on every new successor, deadlock)."""
import json

from deltalake import DeltaTable

from conftest import TEST_MODELS, run_cli


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


def check(capsys, tmp_path, *args):
    code, out, err = run_cli(capsys, "--models", str(TEST_MODELS), "check", "counter",
                             "--warehouse", str(tmp_path / "wh"), "--json", *args)
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
    """A level's shuffles get a partition per ROWS_PER_PARTITION successors; at one successor a
    partition the counts, depth and shortest trace are unchanged, and the session's setting is
    restored afterwards."""
    from engine import checker
    before = spark.conf.get("spark.sql.shuffle.partitions")
    monkeypatch.setattr(checker, "ROWS_PER_PARTITION", 1)
    code, res, _ = check(capsys, tmp_path, "--no-deadlock", "--set", "Steps=1,2", "--set", "Max=8",
                         "--set", "Limit=5")
    want = bfs({1, 2}, 8, limit=5, deadlock=False)
    assert code == 12 and len(res["trace"]) == want["trace_length"]
    code, res, _ = check(capsys, tmp_path, "--config", "no_deadlock", "--set", "Steps=1,2", "--set", "Max=6")
    want = bfs({1, 2}, 6, deadlock=False)
    assert (res["distinct_states"], res["states_generated"], res["depth"]) == \
        (want["distinct"], want["generated"], want["depth"])
    assert spark.conf.get("spark.sql.shuffle.partitions") == before


def test_seen_index_gives_the_same_search(capsys, tmp_path, monkeypatch, spark):
    """Above INDEX_FROM seen states a level is anti-joined against the cached, hash-partitioned seen
    index (engine.seen) instead of the stored files. Used from the first level, merged every other
    level, with one successor a partition (so the index is re-partitioned as levels grow), the
    counts, depth and shortest trace are those of the reference search. Every path to a counter
    state has the same length, so no state is met again at a later level: that the index finds old
    states is tested on ledger chaining (tests/test_ledger_chaining.py)."""
    from engine import arrow_level, checker, seen
    calls = []
    real = seen.SeenIndex.unseen
    monkeypatch.setattr(seen.SeenIndex, "unseen", lambda self, states: calls.append(1) or real(self, states))
    monkeypatch.setattr(seen, "INDEX_FROM", 0)
    monkeypatch.setattr(arrow_level, "DRIVER_SEEN_MAX", 0)  # small levels too
    monkeypatch.setattr(seen, "MAX_FRAGMENTS", 2)
    monkeypatch.setattr(checker, "ROWS_PER_PARTITION", 3)
    code, res, _ = check(capsys, tmp_path, "--config", "no_deadlock", "--set", "Steps=1,2", "--set", "Max=6")
    want = bfs({1, 2}, 6, deadlock=False)
    assert (res["distinct_states"], res["states_generated"], res["depth"]) == \
        (want["distinct"], want["generated"], want["depth"])
    assert len(calls) == want["depth"]  # every level expanded, the last one included
    code, res, _ = check(capsys, tmp_path, "--no-deadlock", "--set", "Steps=1,2", "--set", "Max=8",
                         "--set", "Limit=5")
    want = bfs({1, 2}, 8, limit=5, deadlock=False)
    assert code == 12 and len(res["trace"]) == want["trace_length"]


def test_levels_on_the_driver_or_in_spark_give_the_same_search(capsys, tmp_path, monkeypatch, spark):
    """A small level is finished on the driver as Arrow (engine.arrow_level), a large one by Spark
    jobs. Every level in Spark (its picked rows fetched by broadcast joins, or by shuffled joins as
    for the largest levels), levels alternating between the two (so each path starts from the
    other's stored level and seen states), and every level on the driver with the constraint and
    invariants evaluated on the new states in a job of their own (as for large levels) give the
    reference's counts, deadlock and violation. Driver levels expand through the union analyzed once
    per run (engine.expand.FixedExpansion), or with SSE_FIXED_PLAN=0 through the union planned again
    for each level: both give the same search. Small levels' jobs run interpreted (INTERPRET_BELOW),
    the alternating variant's compiled: the same search."""
    from engine import checker, expand
    fixed_calls = []
    real_successors = expand.FixedExpansion.successors
    monkeypatch.setattr(expand.FixedExpansion, "successors",
                        lambda self, *a: fixed_calls.append(1) or real_successors(self, *a))
    inline, broadcast, interpret = checker.INLINE_ANNOTATION, checker.BROADCAST_ROWS, checker.INTERPRET_BELOW
    auto = spark.conf.get("spark.sql.autoBroadcastJoinThreshold")
    try:
        for tag, on_driver, inline_rows, broadcast_rows, fixed, interpret_rows in (
                ("spark", lambda self, depth, n: False, inline, broadcast, "1", interpret),
                ("spark_shuffled", lambda self, depth, n: False, inline, 0, "1", interpret),
                ("alternating", lambda self, depth, n: depth % 2 == 0, inline, broadcast, "1", -1),
                ("annotated_after", lambda self, depth, n: True, 0, broadcast, "1", interpret),
                ("per_level_plan", lambda self, depth, n: True, inline, broadcast, "0", interpret)):
            monkeypatch.setenv("SSE_FIXED_PLAN", fixed)
            fixed_calls.clear()
            monkeypatch.setattr(checker._Search, "_on_driver", on_driver)
            monkeypatch.setattr(checker, "INLINE_ANNOTATION", inline_rows)
            monkeypatch.setattr(checker, "BROADCAST_ROWS", broadcast_rows)
            monkeypatch.setattr(checker, "INTERPRET_BELOW", interpret_rows)
            # Spark would broadcast so small a table of its own accord: not in the shuffled variant.
            spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1" if broadcast_rows == 0 else auto)
            code, res, err = check(capsys, tmp_path / tag, "--config", "no_deadlock", "--set", "Steps=1,3",
                                   "--set", "Max=9", "--set", "Cap=6")
            want = bfs({1, 3}, 9, cap=6, deadlock=False)
            assert code == 0, err
            assert (res["distinct_states"], res["states_generated"], res["depth"]) == \
                (want["distinct"], want["generated"], want["depth"])
            code, res, _ = check(capsys, tmp_path / tag, "--set", "Steps=1,2", "--set", "Max=5")
            assert code == 11 and len(res["trace"]) == bfs({1, 2}, 5)["trace_length"]
            code, res, _ = check(capsys, tmp_path / tag, "--no-deadlock", "--set", "Steps=1,2", "--set", "Max=8",
                                 "--set", "Limit=5")
            assert code == 12 and len(res["trace"]) == bfs({1, 2}, 8, limit=5, deadlock=False)["trace_length"]
            # Driver levels used the fixed plan unless it was turned off; Spark levels never do.
            assert bool(fixed_calls) == (tag in ("alternating", "annotated_after")), (tag, len(fixed_calls))
    finally:
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", auto)


def test_fixed_expansion_refuses_successors_of_another_level():
    """Successors whose parents are not the frontier just written (stale cached data) are an error,
    not a wrong search."""
    import pyarrow as pa
    import pytest
    from engine.expand import FixedExpansion
    frontier = pa.table({"_fp": [1, 2], "_fp2": [10, 20]})
    FixedExpansion.check_parents(pa.table({"_parent_fp": [1, 2, 2], "_parent_fp2": [10, 20, 20]}), frontier)
    FixedExpansion.check_parents(pa.table({"_parent_fp": pa.array([], pa.int64()),
                                           "_parent_fp2": pa.array([], pa.int64())}), frontier)
    with pytest.raises(RuntimeError, match="stale data"):
        FixedExpansion.check_parents(pa.table({"_parent_fp": [1, 3], "_parent_fp2": [10, 30]}), frontier)


def test_interpreted_block_restores_the_session(spark):
    """``interpreted`` turns code generation off for the jobs in the block and gives the session its
    settings back after it, an error included."""
    import pytest
    from engine.checker import interpreted
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
