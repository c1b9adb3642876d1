"""The P-verified distributed log (step 04, producer takeover) against the reference figures of
MODEL.md, the P program restated as a state machine (its §10.2 and §13: an executable reference
implementation of the same transition system): the depth profiles of configurations T and F, the shortest counterexamples of the bug
variants, and, level by level, an independent Python search of MODEL.md (tests/vl_reference.py) on
constants MODEL.md gives no figures for.

The exhaustive runs of T (468,276 states), T_E1 (78,825), F (400,939) and F's failure shapes take
longer than this file's budget with today's per-level cost; they run when SSE_LONG_TESTS=1.
"""
import json

import pytest
import yaml
from deltalake import DeltaTable

from conftest import run_cli
from level_profile import assert_level_profile, level_profile, profile_mismatch
from vl_reference import explore

# MODEL.md section 13: new states at BFS depth 0, 1, 2, ... of configuration T (37 levels).
T_PROFILE = [1, 1, 2, 4, 9, 15, 30, 92, 279, 734, 1628, 3147, 5448, 8547, 12373, 16876, 21784,
             26538, 30753, 34378, 37132, 38480, 38159, 36293, 33201, 29281, 24997, 20789, 16634,
             12455, 8544, 5216, 2738, 1196, 412, 98, 12]

# MODEL.md 10.2: F has 400,939 states and diameter 27, 28 levels counting the initial state's. The
# first ten levels are the reference implementation's, the rest tests/vl_reference.py's, which
# reproduces every figure of the reference implementation (test_the_independent_search_...).
F_PROFILE = [1, 6, 21, 60, 156, 342, 636, 1194, 2625, 5733, 10875, 17643, 24648, 30438, 35139, 39711,
             43482, 44604, 42231, 36555, 28332, 18957, 10662, 4803, 1650, 375, 54, 6]

# The reference implementation's state counts for F's shape (N 3, R 2, K 1, E 2, 2 segments) with
# fewer failures: (crashes, drops, producer timeouts) -> distinct states.
F_SHAPES = {(0, 0, 0): 169, (1, 0, 0): 1_183, (0, 1, 0): 547, (0, 0, 1): 20_596, (1, 1, 0): 3_637,
            (0, 1, 1): 73_741, (1, 0, 1): 120_064}
# ... of which the first levels of the crash + producer timeout shape (1, 0, 1), also its figures
F_101_PREFIX = [1, 6, 18, 39, 81, 162, 294, 564]

long_test = pytest.mark.long


def _check(capsys, tmp_path, config, *extra):
    code, out, err = run_cli(capsys, "check", "verified_log", "--config", config,
                             "--warehouse", str(tmp_path / "wh"), "--json", *extra)
    return code, json.loads(out), err


def _f_shape(crashes, drops, ptimeouts):
    return ["--set", f"MaxCrashes={crashes}", "--set", f"MaxDrops={drops}", "--set", f"MaxPTimeouts={ptimeouts}"]


def test_naive_single_active_producer_breaks_on_a_delayed_ack(capsys, tmp_path):
    # MODEL.md 11.1: 10 steps; the old producer commits entry 0 from a delayed acknowledgement
    # after producer 2 took over (the coordinator committed 0 on its behalf).
    code, res, err = _check(capsys, tmp_path, "naive_sap")
    assert code == 12, err[-3000:]
    assert res["result"] == "invariant_violated"
    assert res["violated_invariant"] == "SingleActiveProducer"
    actions = [t["action"] for t in res["trace"]]
    assert len(actions) == 11 and actions[0] == "Init"
    assert actions[-1] == "RecvAppendResp"
    assert actions.count("StartProducer") == 1 and "RecvSuspendResp" in actions
    before, last = res["trace"][-2]["state"], res["trace"][-1]["state"]
    assert last["current"] == 1 and before["pc"][0] == "Produce"
    assert last["err"] == "SingleActiveProducer" and last["committed"] & 1 == 1
    # The same commit is allowed by the real monitor: producer 1 sent entry 0 while it was current.
    assert last["hpc"][0] == 0
    # Up to the violation the state space is configuration T's: its depth profile, level by level.
    assert res["depth"] == 11
    why = profile_mismatch(level_profile(res)[:10], T_PROFILE[:10])
    assert why is None, why


@pytest.mark.long
def test_takeover_without_sealing_is_split_brain(capsys, tmp_path):
    # The coordinator gives producer 2 a segment without suspending/closing producer 1's: producer 1
    # keeps committing entries it sent after producer 2 became the current producer.
    code, res, err = _check(capsys, tmp_path, "no_seal")
    assert code == 12, err[-3000:]
    assert res["violated_invariant"] == "SingleActiveProducer"
    actions = [t["action"] for t in res["trace"]]
    # take over (p1), produce (p1), start p2, take over (p2, new segment at once), p2 becomes
    # current, then entries 0 and 1 of p1 replicated on both nodes: two appends and two acks each.
    assert len(actions) == 14 and actions[-1] == "RecvAppendResp"
    assert "NodeSuspend" not in actions and "RecvSuspendResp" not in actions
    last = res["trace"][-1]["state"]
    assert last["current"] == 1 and last["hpc"][0] == 0 and last["committed"] & 0b10
    assert [s["owner"] for s in last["logs"]] == [0, 1]


def test_function_files_are_checked(capsys, tmp_path, model_copy):
    bad = model_copy / "actions_sql" / "verified_log" / "functions" / "vl_has.sql"
    bad.write_text("-- broken on purpose\nSELECT 1\n")
    code, out, err = run_cli(capsys, "--models", str(model_copy), "check", "verified_log",
                             "--warehouse", str(tmp_path / "wh"))
    assert code == 2
    assert f"{bad}: a function file holds one statement" in err


def test_bounds_the_encoding_cannot_hold_are_refused(capsys, tmp_path):
    # Three replicas on two nodes: P would fail choosing a segment's nodes; refused before a run.
    code, out, err = run_cli(capsys, "check", "verified_log", "--set", "NumReplicas=3",
                             "--warehouse", str(tmp_path / "wh"))
    assert code == 2
    assert "the constants break the model's ASSUME BoundsAssumption" in err
    assert "NumReplicas=3" in err and not (tmp_path / "wh" / "verified_log").exists()


@long_test
def test_configuration_T_matches_the_reference(capsys, tmp_path):
    code, res, err = _check(capsys, tmp_path, "T")
    assert code == 0, err[-3000:]
    assert (res["result"], res["distinct_states"], res["depth"]) == ("ok", 468_276, 37)
    assert_level_profile(res, T_PROFILE)


@long_test
def test_configuration_T_E1_matches_the_reference(capsys, tmp_path):
    code, res, err = _check(capsys, tmp_path, "T_E1")
    assert code == 0, err[-3000:]
    assert (res["result"], res["distinct_states"], res["depth"]) == ("ok", 78_825, 25)
    assert_level_profile(res, explore(2, 2, 2, 1)[1])


@long_test
def test_configuration_F_matches_the_reference(capsys, tmp_path):
    code, res, err = _check(capsys, tmp_path, "F")
    assert code == 0, err[-3000:]
    assert (res["result"], res["distinct_states"], res["depth"]) == ("ok", 400_939, 28)
    assert_level_profile(res, F_PROFILE)


def test_a_crash_and_a_producer_timeout_match_the_independent_search(capsys, tmp_path):
    # F with one entry, one segment and no drop: a crash and a producer timeout, nothing else. A close
    # the coordinator adds for a node that already crashed stays in unacknowledgedEndSegments (only
    # the crash itself removes the node's closes, MODEL.md 6.1), so "crash, then close" and "close,
    # then crash" are different states from depth 6 on (the first six levels are F (1, 0, 1)'s).
    states, profile, errors = explore(3, 2, 1, 1, MAX_CRASHES=1, MAX_PTIMEOUTS=1, MAX_SEGMENTS=1)
    assert profile[:6] == F_101_PREFIX[:6] and not errors
    code, res, err = _check(capsys, tmp_path, "F", *_f_shape(1, 0, 1),
                            "--set", "NumEntries=1", "--set", "MaxSegments=1")
    assert code == 0, err[-3000:]
    assert (res["result"], res["distinct_states"], res["depth"]) == ("ok", states, len(profile))
    assert_level_profile(res, profile)
    rows = DeltaTable(res["tables"]["states"]).to_pyarrow_table(columns=["up", "unacked", "_depth"]).to_pylist()
    dead_closes = [r["_depth"] for r in rows if any(not r["up"] >> u["n"] & 1 for u in r["unacked"])]
    assert dead_closes and min(dead_closes) == 6


@pytest.mark.parametrize("shape", [
    pytest.param(shape, marks=long_test, id="crashes{}-drops{}-ptimeouts{}".format(*shape)) for shape in F_SHAPES])
def test_configuration_F_with_fewer_failures_matches_the_reference(capsys, tmp_path, shape):
    code, res, err = _check(capsys, tmp_path, "F", *_f_shape(*shape))
    assert code == 0, err[-3000:]
    assert (res["result"], res["distinct_states"]) == ("ok", F_SHAPES[shape])
    assert_level_profile(res, explore(3, 2, 1, 2, *shape, 2)[1])
    if shape == (1, 0, 1):
        assert level_profile(res)[:8] == F_101_PREFIX


@pytest.mark.parametrize("shape", [
    pytest.param(shape, marks=[] if F_SHAPES[shape] < 5_000 else long_test,
                 id="crashes{}-drops{}-ptimeouts{}".format(*shape)) for shape in F_SHAPES])
def test_the_independent_search_reproduces_the_reference_counts(shape):
    states, profile, errors = explore(3, 2, 1, 2, *shape, 2)
    assert (states, errors) == (F_SHAPES[shape], {})
    if shape == (1, 0, 1):
        assert profile[:8] == F_101_PREFIX


@long_test
def test_the_independent_search_reproduces_T_and_F():
    assert explore(2, 2, 2, 2)[:2] == (468_276, T_PROFILE)
    states, profile, _ = explore(2, 2, 2, 1)
    assert (states, len(profile)) == (78_825, 25)
    assert explore(3, 2, 1, 2, 1, 1, 1, 2)[:2] == (400_939, F_PROFILE)


def test_terminal_findings_are_counted_with_a_shortest_example(capsys, tmp_path):
    # The engine feature the model uses, on the toy counter: x jumps by 1 or 2 up to Max = 4 and
    # remembers the values visited; the states with x = 4 have no successor.
    import shutil
    from conftest import TEST_MODELS
    root = tmp_path / "models"
    shutil.copytree(TEST_MODELS, root)
    schema_path = root / "schemas" / "counter.yml"
    schema = yaml.safe_load(schema_path.read_text())
    schema["terminal_findings"] = ["AtMax", "BelowMax"]
    schema_path.write_text(yaml.safe_dump(schema, sort_keys=False))
    findings = root / "actions_sql" / "counter" / "findings"
    findings.mkdir()
    (findings / "AtMax.sql").write_text("-- test: stopped at Max\nx = Max\n")
    (findings / "BelowMax.sql").write_text("-- test: stopped below Max\nx < Max\n")
    code, out, err = run_cli(capsys, "--models", str(root), "check", "counter", "--config", "no_deadlock",
                             "--warehouse", str(tmp_path / "wh"), "--json")
    assert code == 0, err[-3000:]
    res = json.loads(out)
    # visited sets of the paths 0 -> 4 by steps of 1 and 2: {0,1,2,3,4}, {0,2,4}, {0,1,3,4},
    # {0,2,3,4}, {0,1,2,4}: five terminal states, the first met after two steps (0, 2, 4)
    assert set(res["terminal_findings"]) == {"AtMax"}
    found = res["terminal_findings"]["AtMax"]
    assert found["count"] == 5
    assert [t["state"]["x"] for t in found["trace"]] == [0, 2, 4]
    assert found["trace"][0]["action"] == "Init"
