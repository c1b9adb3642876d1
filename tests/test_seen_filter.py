"""The seen fingerprints in the tasks' JVM (engine.accel.seen_filter, engine/runtime/jvm/SeenSet.java): what the
set answers, what the actions' job blanks with it, and that a set out of step with the driver stops
the search instead of dropping states."""
import json

import numpy as np
import pyarrow as pa
import pytest
from deltalake import DeltaTable

from conftest import TEST_MODELS, run_cli, setting_args

from engine.settings import Settings


def _probe(spark, name, pairs):
    df = spark.createDataFrame([(int(a), int(b)) for a, b in pairs], "a bigint, b bigint")
    return [r["s"] for r in df.selectExpr(f"sse_seen('{name}', a, b) AS s").collect()]


@pytest.mark.parametrize("through", ["call", "file"])
def test_the_jvm_set_holds_exactly_what_was_added(spark, tmp_path, monkeypatch, through):
    """Pairs added (the zero pair, the ends of the 64-bit range, enough random ones that the table
    grows several times) are found, in generated code and interpreted; a pair with either half
    changed, or swapped, is not; adding a pair again does not count it twice; a stopped set finds
    nothing. Small levels' pairs go to the JVM in the Py4J call, larger ones through a file."""
    from engine.accel.search import interpreted
    from engine.accel.seen_filter import SeenFilter
    rng = np.random.default_rng(7)
    pairs = [(0, 0), (-(2 ** 63), 2 ** 63 - 1), (1, 0), (0, 1)]
    pairs += [tuple(p) for p in rng.integers(-(2 ** 63), 2 ** 63 - 1, size=(20_000, 2), dtype=np.int64)]
    seen = SeenFilter(spark, tmp_path, Settings(seen_filter_call_max=1 << 15 if through == "call" else 0))
    assert seen.on
    seen.add(pa.table({"_fp": [a for a, _ in pairs[:10_000]], "_fp2": [b for _, b in pairs[:10_000]]}))
    seen.add(pa.table({"_fp": [a for a, _ in pairs[5_000:]], "_fp2": [b for _, b in pairs[5_000:]]}))
    assert seen.count == len(pairs)
    assert list(tmp_path.iterdir()) == []  # the file handed to the JVM is gone
    others = [(a, b ^ 1) for a, b in pairs[4:1004]] + [(a ^ 1, b) for a, b in pairs[4:1004]] + \
             [(b, a) for a, b in pairs[4:1004]] + [(2, 0), (0, 2)]
    for on in (False, True):
        with interpreted(spark, on):
            assert all(_probe(spark, seen.name, pairs[:3000]))
            assert not any(_probe(spark, seen.name, others))
    assert not any(_probe(spark, "sse-no-such-set", pairs[:10]))
    seen.stop()
    assert not seen.on and not any(_probe(spark, seen.name, pairs[:10]))


def test_seen_rows_are_blanked_and_new_rows_kept(spark, tmp_path):
    """``mark`` and ``blank`` NULL the named columns of rows whose fingerprint is in the set, and
    leave the others (and every column of the unseen rows) as they were."""
    from engine.accel.seen_filter import SeenFilter
    seen = SeenFilter(spark, tmp_path)
    seen.add(pa.table({"_fp": [1, 3], "_fp2": [10, 30]}))
    df = spark.createDataFrame([(1, 10, [1, 2], "a", 5), (2, 20, [3], "b", 6), (3, 30, [], "c", 7)],
                               "_fp bigint, _fp2 bigint, xs array<int>, s string, k int")
    got = seen.blank(seen.mark(df), ["xs", "s"]).orderBy("_fp").collect()
    assert [r.asDict() for r in got] == [
        {"_fp": 1, "_fp2": 10, "xs": None, "s": None, "k": 5, "_seen": True},
        {"_fp": 2, "_fp2": 20, "xs": [3], "s": "b", "k": 6, "_seen": False},
        {"_fp": 3, "_fp2": 30, "xs": None, "s": None, "k": 7, "_seen": True},
    ]
    seen.stop()
    assert seen.mark(df).columns == df.columns  # off: nothing added, nothing blanked


def test_new_states_marked_seen_are_refused():
    from engine.accel.seen_filter import SeenFilter
    kept = SeenFilter.check(pa.table({"x": [1, 2], "_seen": [False, False]}))
    assert kept.column_names == ["x"]
    assert SeenFilter.check(pa.table({"x": [1]})).column_names == ["x"]
    with pytest.raises(RuntimeError, match=r"the JVM's seen set holds a state the driver found new.*SSE_SEEN_FILTER=0"):
        SeenFilter.check(pa.table({"x": [1, 2], "_seen": [False, True]}))


def _check(capsys, tmp_path, model, *args, settings=None):
    models = ["--models", str(TEST_MODELS)] if model == "tokens" else []
    code, out, err = run_cli(capsys, *models, *setting_args(**(settings or {})), "check", model,
                             "--warehouse", str(tmp_path / "wh"), "--json", "--fresh", *args)
    assert code == 0, err
    return json.loads(out)


def test_a_search_blanks_successors_seen_before_and_finds_the_same_states(capsys, tmp_path, monkeypatch):
    """On ledger chaining with two clients (leaders change back and forth: states met again at
    later levels) the actions' job returns successors seen at earlier levels with NULL state,
    constraint and invariant columns and the others whole, and the search finds what it finds with
    the filter off."""
    import engine.accel.held as expand
    from engine.model.loader import load_model
    small = ("--set", "Clients=c1,c2", "--set", "LedgerLimit=2")
    outputs = []
    real = expand.HeldExpansion.successors
    monkeypatch.setattr(expand.HeldExpansion, "successors",
                        lambda self, *a, **k: outputs.append(real(self, *a, **k)) or outputs[-1])
    on = _check(capsys, tmp_path / "on", "ledger_chaining", *small)
    blanked = [t.filter(t["_seen"]) for t in outputs]
    assert sum(t.num_rows for t in blanked) > 0
    wide = [*load_model("ledger_chaining").variable_names, "_in_model",
            *[c for c in outputs[0].column_names if c.startswith("_inv_")]]
    assert len(wide) > 3
    for t in blanked:
        for column in wide:
            assert t[column].null_count == t.num_rows, column
    kept = [t.filter(pa.compute.invert(t["_seen"])) for t in outputs]
    assert all(t[column].null_count == 0 for t in kept for column in wide)

    outputs.clear()
    off = _check(capsys, tmp_path / "off", "ledger_chaining", *small, settings={"seen_filter": False})
    assert outputs and all("_seen" not in t.column_names for t in outputs)
    assert (on["distinct_states"], on["states_generated"], on["depth"]) == \
        (off["distinct_states"], off["states_generated"], off["depth"])


def test_a_set_holding_a_state_the_driver_finds_new_stops_the_search(capsys, tmp_path, monkeypatch):
    """The JVM's set given the fingerprints of states the search has not stored yet (as a set out of
    step with the driver would be) blanks new states: the run stops with an internal error naming
    SSE_SEEN_FILTER=0."""
    from engine.accel.seen_filter import SeenFilter
    first = _check(capsys, tmp_path / "first", "tokens", "--config", "nosym")
    every = DeltaTable(first["tables"]["states"]).to_pyarrow_table(columns=["_fp", "_fp2"])
    real = SeenFilter.add
    monkeypatch.setattr(SeenFilter, "add", lambda self, fps: real(self, fps) or real(self, every))
    code, out, err = run_cli(capsys, "--models", str(TEST_MODELS), "check", "tokens", "--config", "nosym",
                             "--warehouse", str(tmp_path / "second"), "--json", "--fresh")
    assert code != 0
    assert "the JVM's seen set holds a state the driver found new" in err
    assert "SSE_SEEN_FILTER=0" in err


def test_a_level_keeps_one_row_per_fingerprint_whatever_the_order(spark, tmp_path):
    """With a level open, the first row to claim a fingerprint keeps it, a row of the same state with
    another key is blanked, the same row met again (a task run again: same key) keeps it again, and
    stored fingerprints stay blanked; in generated code and interpreted. Closed, only stored ones
    are."""
    from engine.accel.search import interpreted
    from engine.accel.seen_filter import SeenFilter
    seen = SeenFilter(spark, tmp_path)
    assert seen.repeats
    seen.add(pa.table({"_fp": [9], "_fp2": [90]}))
    rows = [(1, 10, 5), (2, 20, 3), (1, 10, 7), (1, 10, 5), (9, 90, 1), (2, 20, 1), (0, 0, 4), (0, 0, 2)]
    df = spark.createDataFrame(rows, "_fp bigint, _fp2 bigint, _key bigint").coalesce(1)

    def marks():
        return [r["_seen"] for r in seen.mark(df).collect()]

    for on in (False, True):
        with interpreted(spark, on):
            seen.open_level()
            assert marks() == [False, False, True, False, True, True, False, True]
            assert marks() == [False, False, True, False, True, True, False, True]  # the same job again
            seen.open_level()
            many = spark.range(50_000).selectExpr("id % 20000 AS _fp", "-id % 20000 AS _fp2", "id AS _key")
            got = seen.mark(many.coalesce(1)).where("NOT _seen").selectExpr("_key").collect()
            assert sorted(r["_key"] for r in got) == list(range(20_000))  # the table grew; firsts kept
    spark._jvm.sse.SeenSet.level(seen.name, False)
    assert marks() == [False, False, False, False, True, False, False, False]
    seen.stop()


@pytest.mark.parametrize("where", ["driver", pytest.param("spark", marks=pytest.mark.long),
                                   pytest.param("spark_in_spark", marks=pytest.mark.long)])
def test_repeats_blanked_within_a_level_store_the_same_states_and_paths(spark, capsys, tmp_path, monkeypatch, where):
    """Ledger chaining with two clients, repeats within a level blanked (the default) and not
    (``level_filter`` off): the stored states are the same, with the same parent, action and order
    (the first path in TLC's order), for levels finished on the driver, by Spark with the keys on the
    driver, and by Spark alone. On the driver, rows of states not stored before were blanked, and
    each level's rows that kept their columns hold one row a state. Each state is stored with its
    level's depth, and Spark levels with the keys on the driver compile no new code after the first two."""
    import engine.accel.search as checker
    import engine.accel.held as expand
    from engine.model.loader import load_model
    where_settings = {"driver": {}, "spark": {"level_path": "spark"},
                      "spark_in_spark": {"level_path": "spark", "narrow_on_driver": 0}}[where]
    outputs = []
    real = expand.HeldExpansion.successors
    monkeypatch.setattr(expand.HeldExpansion, "successors",
                        lambda self, *a, **k: outputs.append(real(self, *a, **k)) or outputs[-1])
    # Janino's compilations (Spark's CodegenMetrics) during each Spark level. With the keys on the
    # driver, the held plan's code is compiled once and each level's fetch of its new states is the
    # same code again (the depth a column, not a literal Spark writes into the code): before, every
    # level compiled two classes of its own. (Allowed: one level's pair, as a class the JVM-wide
    # code cache let go. Spark alone plans its shuffles afresh each level, with new stage numbers.)
    compiled = spark._jvm.org.apache.spark.metrics.source.CodegenMetrics.METRIC_COMPILATION_TIME()
    per_level = []
    real_level = checker.AcceleratedSearch._spark_level

    def counted_level(self, *a, **k):
        before = compiled.getCount()
        try:
            return real_level(self, *a, **k)
        finally:
            per_level.append(compiled.getCount() - before)
    monkeypatch.setattr(checker.AcceleratedSearch, "_spark_level", counted_level)
    small = ("--set", "Clients=c1,c2", "--set", "LedgerLimit=2")
    tables = {}
    for level_filter in ("1", "0"):
        outputs.clear()
        per_level.clear()
        res = _check(capsys, tmp_path / level_filter, "ledger_chaining", *small,
                     settings={**where_settings, "level_filter": level_filter == "1"})
        states = DeltaTable(res["tables"]["states"]).to_pyarrow_table()
        tables[level_filter] = states.sort_by([("_depth", "ascending"), ("_ord", "ascending")])
        levels = DeltaTable(res["tables"]["levels"]).to_pyarrow_table(columns=["depth", "new_states"]).to_pylist()
        by_depth = states.group_by("_depth").aggregate([("_ord", "count")]).to_pylist()
        assert {r["_depth"]: r["_ord_count"] for r in by_depth} == \
            {r["depth"]: r["new_states"] for r in levels if r["new_states"]}
        if where == "spark":
            assert len(per_level) > 10 and sum(per_level[2:]) <= 2, per_level
        if where == "driver" and level_filter == "1":
            assert outputs
            stored, repeats = set(), 0
            var = load_model("ledger_chaining").variable_names[0]
            for t in outputs:
                kept = t.filter(pa.compute.invert(t["_seen"]))
                fps = list(zip(kept["_fp"].to_pylist(), kept["_fp2"].to_pylist()))
                assert len(fps) == len(set(fps))  # one row a state kept its columns
                assert kept[var].null_count == 0
                blanked = t.filter(t["_seen"])
                repeats += sum(1 for p in zip(blanked["_fp"].to_pylist(), blanked["_fp2"].to_pylist())
                               if p not in stored)
                stored |= set(fps)
            assert repeats > 0
    on, off = tables["1"], tables["0"]
    assert on.num_rows == off.num_rows > 0
    for column in ["_fp", "_fp2", "_depth", "_ord", "_parent_fp", "_parent_fp2", "_parent_ord", "_action",
                   *load_model("ledger_chaining").variable_names]:
        if column in off.column_names:
            assert on[column].equals(off[column]), column
