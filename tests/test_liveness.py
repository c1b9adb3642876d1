"""Liveness properties over the stored state graph (engine.search.liveness).

- The five forms (<>P, []<>P, <>[]P, P ~> Q, AG EF P) on the toy counter with cycles
  (tests/models/schemas/counter_live.yml) under several fairness conditions, against an independent
  brute-force check of the same graph in Python (tests/liveness_reference.py): the verdict, the
  number of bad states, and that each lasso is a fair behavior of the model that violates the property.
- Lassos written as ITF with their loop index, printed as TLC prints them, and replayed.
- Bad input: a property with symmetry, SQL that does not parse or names no variable of the model, a
  file without its form, unknown names.
- Pulsar's Termination (small constants in the default suite; the oracle's pc_c2 as a long test),
  BookKeeper's Liveness (long) and the P log's Progress proxy with the bug variant no_end_retry (long),
  against TLC's figures and MODEL.md's.
"""
import json
import re
from pathlib import Path

import pytest

from conftest import FIXTURES, TEST_MODELS, run_cli
from liveness_reference import Checker, counter_live_graph

TLC = FIXTURES / "tlc"

# counter_live's properties as the reference evaluates them on (x, visited): (form, P, Q).
MAX = 3
PROPS = {
    "EventuallyMax": ("<>", lambda s: s[0] == MAX, None),
    "InfinitelyOftenOne": ("[]<>", lambda s: s[0] == 1, None),
    "EventuallyAlwaysBelowMax": ("<>[]", lambda s: s[0] < MAX, None),
    "OneLeadsToMax": ("~>", lambda s: s[0] == 1, lambda s: s[0] == MAX),
    "AlwaysCanReachZero": ("AG EF", lambda s: s[0] == 0, None),
    "EventuallyAllVisited": ("<>", lambda s: len(s[1]) == MAX + 1, None),
}


@pytest.fixture(scope="module")
def counter_live_wh(tmp_path_factory):
    return tmp_path_factory.mktemp("live") / "wh"


def _counter_live(capsys, wh, *extra):
    args = ["--models", str(TEST_MODELS), "check", "counter_live", "--config", "live", "--warehouse", str(wh),
            "--json", "--quiet"]
    for name in PROPS:
        args += ["--property", name]
    code, out, err = run_cli(capsys, *args, *extra)
    assert out, err[-3000:]
    return code, json.loads(out), err


def _state(t):
    return t["state"]["x"], tuple(t["state"]["visited"])


def _check_against_reference(res, fairness):
    ref = Checker(*counter_live_graph(max_=MAX))
    for name, (form, p, q) in PROPS.items():
        got = res["properties"][name]
        holds, bad = ref.verdict(form, p, q, fairness)
        assert (got["holds"], got["bad_states"]) == (holds, bad), (name, fairness)
        if got["holds"]:
            assert got["trace"] == [] and got["loop"] is None
            continue
        states = [_state(t) for t in got["trace"]]
        actions = [t["action"] for t in got["trace"]]
        if form == "AG EF":
            # A shortest path to a doomed state: no path from it reaches P.
            assert got["loop"] is None and not ref.verdict("AG EF", p)[0]
            continue
        why = ref.lasso_violates(form, p, q, fairness, states, actions, got["loop"], got["loop_action"])
        assert why is None, (name, fairness, why, states, got["loop"], got["loop_action"])


@pytest.mark.parametrize("fairness", [pytest.param([], marks=pytest.mark.long),
                                      pytest.param(["weak"], marks=pytest.mark.long),
                                      ["weak:Jump", "strong:Reset"]],
                         ids=["no_fairness", "weak", "weak_Jump_strong_Reset"])
def test_forms_on_the_counter_against_an_independent_check(capsys, counter_live_wh, fairness):
    extra = [a for f in fairness for a in ("--fairness", f)]
    code, res, err = _counter_live(capsys, counter_live_wh, *extra)
    assert (res["distinct_states"], res["depth"]) == (14, 5)
    assert res["fairness"] == fairness
    _check_against_reference(res, fairness)
    violated = [n for n in PROPS if not res["properties"][n]["holds"]]
    assert code == (13 if violated else 0)
    assert res["result"] == ("property_violated" if violated else "ok")
    assert res["violated_property"] == (violated[0] if violated else None)
    if violated:
        first = res["properties"][violated[0]]
        assert res["trace"] == first["trace"] and res["loop"] == first["loop"]


@pytest.mark.long
@pytest.mark.parametrize("fairness", [["strong:Jump"], ["weak", "weak:Reset"], ["strong:Step", "weak:Jump"],
                                      ["strong:Reset", "strong:Jump"]])
def test_more_fairness_on_the_counter_against_an_independent_check(capsys, counter_live_wh, fairness):
    extra = [a for f in fairness for a in ("--fairness", f)]
    _, res, _ = _counter_live(capsys, counter_live_wh, *extra)
    _check_against_reference(res, fairness)


def test_a_lasso_is_written_as_itf_with_its_loop_printed_as_tlc_does_and_replays(capsys, tmp_path, counter_live_wh):
    import itf_py
    # Under WF_vars(Next), []<>(x = 1) is violated by a cycle through 0, 2, 3 that never meets x = 1.
    wh = counter_live_wh
    code, out, err = run_cli(capsys, "--models", str(TEST_MODELS), "check", "counter_live", "--config", "live",
                             "--warehouse", str(wh), "--property", "InfinitelyOftenOne", "--fairness", "weak",
                             "--itf", str(tmp_path / "lasso.itf.json"))
    assert code == 13, err[-3000:]
    assert "Error: Temporal properties were violated." in out
    assert "Error: Property InfinitelyOftenOne ([]<>) does not hold under WF_vars(Next)." in out
    back = re.search(r"^Back to state (\d+): <(\w+)>$", out, re.M)
    assert back, out
    doc = json.loads((tmp_path / "lasso.itf.json").read_text())
    loop = doc["loop"]
    assert doc["#meta"]["loop"] == loop and doc["#meta"]["property"] == "InfinitelyOftenOne"
    assert int(back.group(1)) == loop + 1 and doc["#meta"]["loop_action"] == back.group(2)
    assert itf_py.trace_from_json(doc).loop == loop
    xs = [s["x"]["#bigint"] for s in doc["states"]]
    assert "1" not in xs[loop:]
    code, out, err = run_cli(capsys, "--models", str(TEST_MODELS), "replay", str(tmp_path / "lasso.itf.json"),
                             "--json")
    rep = json.loads(out)
    assert code == 0 and rep["legal"] and rep["loop"] == loop, out
    assert rep["length"] == len(doc["states"]) and len(rep["steps"]) == len(doc["states"]) + 1
    assert rep["steps"][-1]["label"] == f"Back to state {loop + 1}" and rep["steps"][-1]["actions"]

    # Without fairness <>(x = Max) is violated by stuttering in the initial state: one state, then
    # "Stuttering"; its loop is the last state, and the stuttering step replays as legal.
    code, out, err = run_cli(capsys, "--models", str(TEST_MODELS), "check", "counter_live", "--config", "live",
                             "--warehouse", str(wh), "--property", "EventuallyMax",
                             "--itf", str(tmp_path / "stutter.itf.json"))
    assert code == 13
    assert "State 1: <Initial predicate>" in out and "State 2: Stuttering" in out
    doc = json.loads((tmp_path / "stutter.itf.json").read_text())
    assert len(doc["states"]) == 1 and doc["loop"] == 0 and doc["#meta"]["loop_action"] is None
    code, out, err = run_cli(capsys, "--models", str(TEST_MODELS), "replay", str(tmp_path / "stutter.itf.json"))
    assert code == 0, out
    assert "[ok ] state 2 <Stuttering> by (stuttering)" in out
    assert "a lasso: the last state stutters for ever" in out

    # A cycle whose closing step is not a step of the model does not replay.
    doc = json.loads((tmp_path / "lasso.itf.json").read_text())
    doc["loop"] = doc["#meta"]["loop"] = 0
    (tmp_path / "bad.itf.json").write_text(json.dumps(doc))
    code, out, err = run_cli(capsys, "--models", str(TEST_MODELS), "replay", str(tmp_path / "bad.itf.json"))
    assert code == 13 and "Back to state 1" in out and "[BAD]" in out


def test_edges_are_stored_per_level_only_when_asked(capsys, counter_live_wh, tmp_path):
    from deltalake import DeltaTable
    _counter_live(capsys, counter_live_wh)  # (the run of the tests above, or made here)
    # The counter_live runs kept their edges: one commit per level after the first, each with
    # the run's transaction, every step once (14 states, 28 steps, none to itself).
    runs = sorted(Path(counter_live_wh, "counter_live").glob("live-*"))
    assert len(runs) == 1
    edges = DeltaTable(str(runs[0] / "edges"))
    t = edges.to_pyarrow_table()
    assert t.num_rows == 28 and t.column_names == ["_from_fp", "_from_fp2", "_to_fp", "_to_fp2", "_action"]
    commits = [c for c in edges.history() if c.get("depth")]
    assert sorted(int(c["depth"]) for c in commits) == [2, 3, 4, 5, 6]
    assert edges.transaction_version(runs[0].name) == 6
    # A safety run keeps none, and is the accelerated path's when it can be.
    code, out, err = run_cli(capsys, "--models", str(TEST_MODELS), "check", "counter_live", "--config", "live",
                             "--warehouse", str(tmp_path / "wh"), "--json", "--quiet")
    res = json.loads(out)
    assert "edges" not in res["tables"] and not (Path(res["tables"]["states"]).parent / "edges").exists()


# ---- bad input ------------------------------------------------------------------------------------

def test_a_property_with_symmetry_is_refused(capsys):
    code, out, err = run_cli(capsys, "check", "bookkeeper", "--config", "bk_master_2b_sym", "--property", "Liveness")
    assert code == 2
    assert err.strip() == (
        "error: liveness properties (Liveness) cannot be checked under symmetry: TLC warns that the two together "
        "are unsound, and a lasso of orbits need not be one of states; turn symmetry off with --no-symmetry (or "
        "'symmetry: false' in the configuration)")


def test_unknown_names_and_fairness_are_refused(capsys):
    base = ["--models", str(TEST_MODELS), "check", "counter_live", "--config", "live"]
    code, out, err = run_cli(capsys, *base, "--property", "Nope")
    assert code == 2 and err.strip() == (
        "error: model counter_live has no property 'Nope' (properties: EventuallyMax, InfinitelyOftenOne, "
        "EventuallyAlwaysBelowMax, OneLeadsToMax, AlwaysCanReachZero, EventuallyAllVisited)")
    code, out, err = run_cli(capsys, *base, "--property", "EventuallyMax", "--fairness", "weak:Jumps")
    assert code == 2 and err.strip() == (
        "error: fairness 'weak:Jumps': Jumps is not an action of the model (actions: Step, Reset, Jump)")
    code, out, err = run_cli(capsys, *base, "--property", "EventuallyMax", "--fairness", "fair")
    assert code == 2 and err.strip() == (
        "error: fairness 'fair': write weak (WF_vars(Next)), strong (SF_vars(Next)), weak:ACTION, strong:ACTION, "
        "or none alone")
    code, out, err = run_cli(capsys, *base, "--fairness", "weak")
    assert code == 2 and err.strip().startswith("error: --fairness applies to liveness properties: name one with "
                                                "--property")


def _broken(models, name, text):
    (models / "actions_sql" / "counter_live" / "properties" / f"{name}.sql").write_text(text)
    return models / "actions_sql" / "counter_live" / "properties" / f"{name}.sql"


def test_property_files_that_do_not_read_are_refused_with_their_path(capsys, test_models_copy, tmp_path):
    models = test_models_copy
    cases = [
        ("-- no form\nx = Max\n", "a property file names its form in a comment line '-- form: F' before its SQL, "
                                  "F one of <>, []<>, <>[], ~>, AG EF"),
        ("-- X\n-- form: []\nx = Max\n", "form '[]' is not one of <>, []<>, <>[], ~>, AG EF"),
        ("-- X\n-- form: ~>\nx = 1\n", "a '~>' property holds two SQL expressions separated by a line '~>'"),
        ("-- X\n-- form: <>\n-- fairness: weak:Nope\nx = 1\n",
         "fairness 'weak:Nope': Nope is not an action of the model (actions: Step, Reset, Jump)"),
    ]
    for text, message in cases:
        path = _broken(models, "EventuallyMax", text)
        code, out, err = run_cli(capsys, "--models", str(models), "check", "counter_live", "--config", "live",
                                 "--property", "EventuallyMax", "--warehouse", str(tmp_path / "wh"))
        assert code == 2 and err.strip() == f"error: {path}: {message}", err


def test_property_sql_is_analyzed_like_an_invariant(capsys, test_models_copy, tmp_path):
    models = test_models_copy
    args = ["--models", str(models), "check", "counter_live", "--config", "live", "--property", "EventuallyMax",
            "--warehouse", str(tmp_path / "wh")]
    path = _broken(models, "EventuallyMax", "-- X\n-- form: <>\nx = = Max\n")
    code, out, err = run_cli(capsys, *args)
    assert code == 2 and err.startswith(f"error: {path}: [PARSE_SYNTAX_ERROR] Syntax error at or near '='"), err
    path = _broken(models, "EventuallyMax", "-- X\n-- form: <>\ny = Max\n")
    code, out, err = run_cli(capsys, *args)
    assert code == 2 and err.startswith(f"error: {path}: [UNRESOLVED_COLUMN.WITH_SUGGESTION] A column, variable, "
                                        "or function parameter with name `y` cannot be resolved."), err
    path = _broken(models, "EventuallyMax", "-- X\n-- form: <>\nx + 1\n")
    code, out, err = run_cli(capsys, *args)
    assert code == 2 and err.strip() == (f"error: {path}: a property is a boolean SQL expression over one state; "
                                         "this one is int")


# ---- Pulsar: Termination --------------------------------------------------------------------------

def _pulsar(capsys, wh, config, *extra):
    code, out, err = run_cli(capsys, "check", "pulsar_compaction", "--config", config, "--warehouse", str(wh),
                             "--json", "--quiet", *extra)
    assert out, err[-3000:]
    return code, json.loads(out)


def test_pulsar_termination_small_holds_with_weak_fairness_and_stutters_without(capsys, tmp_path):
    # One message, one compaction: Termination holds under WF_vars(Next) (the configuration's) ...
    code, res = _pulsar(capsys, tmp_path / "wh", "pc_small_termination")
    assert code == 0 and res["properties"]["Termination"]["holds"]
    assert (res["distinct_states"], res["depth"]) == (72, 8)
    # ... and without fairness (the same run, checked again over its tables) it is violated: a shortest
    # counterexample stutters in an initial state.
    code, res = _pulsar(capsys, tmp_path / "wh", "pc_small_termination", "--fairness", "none")
    assert code == 13 and res["from_cache"] and res["violated_property"] == "Termination"
    assert [t["action"] for t in res["trace"]] == ["Init"] and res["loop"] == 0 and res["loop_action"] is None


@pytest.mark.long
def test_pulsar_termination_pc_c2_as_tlc(capsys, tmp_path):
    # TLC (-lncheck final, Spec /\ WF_vars(Next)): Termination holds, 45,198 distinct states, depth 20.
    code, res = _pulsar(capsys, tmp_path / "wh", "pc_c2_termination_fair")
    assert code == 0 and res["properties"]["Termination"] == {**res["properties"]["Termination"], "holds": True}
    assert (res["distinct_states"], res["states_generated"], res["depth"]) == (45_198, 60_507, 20)
    # Without fairness TLC reports a violation by stuttering (its trace: 16 states, then Stuttering); a
    # shortest one stutters in an initial state.
    code, res = _pulsar(capsys, tmp_path / "wh", "pc_c2", "--property", "Termination")
    assert code == 13 and res["result"] == "property_violated"
    assert len(res["trace"]) == 1 and res["loop"] == 0 and res["loop_action"] is None
    tlc = (TLC / "pc_c2_termination_nofairness.txt").read_text()
    assert "State 17: Stuttering" in tlc
    # TLC's lasso is a behavior of this model too: every step and the stuttering replay as legal.
    code, out, err = run_cli(capsys, "replay", str(TLC / "pc_c2_termination_nofairness.txt"), "--tlc",
                             "--model", "pulsar_compaction", "--config", "pc_c2", "--json")
    rep = json.loads(out)
    assert code == 0 and rep["legal"] and rep["length"] == 16 and rep["loop"] == 15


# ---- BookKeeper: Liveness ---------------------------------------------------------------------------

@pytest.mark.long
def test_bookkeeper_liveness_is_violated_as_tlc_finds(capsys, tmp_path):
    code, out, err = run_cli(capsys, "check", "bookkeeper", "--config", "bk_master_2b_liveness",
                             "--warehouse", str(tmp_path / "wh"), "--json", "--quiet")
    res = json.loads(out)
    assert (res["distinct_states"], res["states_generated"], res["depth"]) == (285_773, 982_019, 28)
    assert code == 13 and res["violated_property"] == "Liveness" and res["fairness"] == []
    assert res["properties"]["Liveness"]["fairness"] == ["weak"]
    # TLC's counterexample: 6 states, then stuttering where no action is enabled, the ledger not closed.
    tlc = (TLC / "bk_master_2b_liveness.txt").read_text()
    assert re.findall(r"^State (\d+): Stuttering", tlc, re.M) == ["7"]
    assert len(res["trace"]) <= 6 and res["loop"] == len(res["trace"]) - 1 and res["loop_action"] is None
    last = res["trace"][-1]["state"]
    assert not (last["meta_status"] == "STATUS_CLOSED" and any(c["status"] == "STATUS_CLOSED" for c in last["clients"]))
    code, out, err = run_cli(capsys, "replay", str(TLC / "bk_master_2b_liveness.txt"), "--tlc", "--model", "bookkeeper",
                             "--config", "bk_master_2b_liveness", "--json")
    rep = json.loads(out)
    assert code == 0 and rep["legal"] and rep["length"] == 6 and rep["loop"] == 5


# ---- The P log: Progress (MODEL.md 8.4), no_end_retry (MODEL.md 11.3) ---------------------------------

@pytest.mark.long
def test_verified_log_no_end_retry_dooms_states_as_model_md_says(capsys, tmp_path):
    code, out, err = run_cli(capsys, "check", "verified_log", "--config", "no_end_retry",
                             "--warehouse", str(tmp_path / "wh"), "--json", "--quiet")
    res = json.loads(out)
    assert res["distinct_states"] == 829_369
    prog = res["properties"]["Progress"]
    assert code == 13 and not prog["holds"] and prog["bad_states"] == 2_208
    actions = [t["action"] for t in res["trace"]]
    assert len(actions) == 9 and res["loop"] is None  # a shortest path of 8 steps to a doomed state
    # MODEL.md's path (its steps 1 to 8) up to the order of independent steps: the first doomed state in
    # breadth-first order is reached with the lost close before the delivered one, and the crash
    # before the coordinator hears the close confirmed.
    model_md = ["CoordTakeOverLog", "RecvNewSegResp", "ProducerTimeout", "CoordNewSegment",
                "RecvEndSegment", "Drop", "RecvEndSegmentResp", "Crash"]
    assert actions[1:5] == model_md[:4] and sorted(actions[5:]) == sorted(model_md[4:]), actions


@pytest.mark.long
def test_verified_log_f_makes_progress(capsys, tmp_path):
    code, out, err = run_cli(capsys, "check", "verified_log", "--config", "F", "--property", "Progress",
                             "--warehouse", str(tmp_path / "wh"), "--json", "--quiet")
    res = json.loads(out)
    assert code == 0 and res["distinct_states"] == 400_939
    assert res["properties"]["Progress"]["holds"] and res["properties"]["Progress"]["bad_states"] == 0
