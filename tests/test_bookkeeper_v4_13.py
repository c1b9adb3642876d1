"""BookKeeper v4.13 (BookKeeperProtocol_v4_13.tla) against an independent search of the spec.

The reference is tests/bk_v413_reference.py, a plain-Python breadth-first search written from the
TLA+ separately from the SQL. TLC's own figures for the repository's configuration (3 bookies) are
benchmark runs, reported in README.md, not suite tests: they take minutes.
"""
import collections
import json
from pathlib import Path

import pytest

import bk_v413_reference as ref
from conftest import FIXTURES, run_cli

MODEL = "bookkeeper_v4_13"
# TLC's counterexample for the oracle's bk_v413 configuration, as TLC printed it.
TLC_TRACE = FIXTURES / "tlc" / "bk_v413.txt"


def check(capsys, tmp_path, *args):
    code, out, err = run_cli(capsys, "check", MODEL, "--warehouse", str(tmp_path / "wh"), "--json", *args)
    assert out.strip(), err[-3000:]
    return code, json.loads(out), err


def replay(spec, trace):
    """Each step of an engine trace is a successor of the step before by the action it names."""
    states = [ref.from_row(step["state"]) for step in trace]
    assert states[0] == spec.init()
    for (prev, step), cur in zip(zip(states, trace[1:]), states[1:]):
        assert (step["action"], cur) in spec.successors(prev), f"no {step['action']} step to {cur}"
    return states


@pytest.mark.long  # (the model's union of actions is planned and compiled cold for a 3-state trace)
def test_deadlock_checking_on_finds_the_closed_ledger(capsys, tmp_path):
    # With deadlock checking on (TLC without -deadlock): w1 creates the ledger and closes it at
    # once; then nothing is enabled (no messages, and recovery needs an open ledger). TLC with two
    # workers reported a 4-state trace (create, send, close); a strictly breadth-first search finds
    # this 3-state one, as the reference search does.
    code, res, err = check(capsys, tmp_path, "--config", "bk_v413_deadlock")
    want = ref.bfs(["b1", "b2", "b3"], 3, 2, 1, False, deadlock=True)
    assert code == 11, err[-3000:]
    assert res["result"] == "deadlock"
    assert [t["action"] for t in res["trace"]] == want["trace"] == ["Init", "W1CreatesLedger", "W1CloseLedgerSuccess"]
    last = res["trace"][-1]["state"]
    assert (last["meta_status"], last["w1"]["status"], last["messages"]) == ("STATUS_CLOSED", "STATUS_CLOSED", [])
    replay(ref.Spec(["b1", "b2", "b3"], 3, 2, 1, False), res["trace"])


@pytest.mark.long
def test_defect_1_with_two_bookies(capsys, tmp_path):
    # Defect 1 needs no third bookie: with Bookies {b1,b2}, WQ = AQ = 2, w1 gets its entry
    # acknowledged by both bookies while w2's recovery read of b1 (not fenced: recovery reads do not
    # fence) and w2's read of b2 before the add both say NoSuchEntry, so w2 closes the ledger empty.
    code, res, err = check(capsys, tmp_path, "--set", "Bookies=b1,b2", "--set", "WriteQuorum=2",
                           "--set", "AckQuorum=2")
    want = ref.bfs(["b1", "b2"], 2, 2, 1, False)
    assert code == 12, err[-3000:]
    assert res["violated_invariant"] == want["violated_invariant"] == "NoDivergenceBetweenWriterAndMetaData"
    assert len(res["trace"]) == len(want["trace"]) == res["depth"] == 16
    states = replay(ref.Spec(["b1", "b2"], 2, 2, 1, False), res["trace"])
    last = states[-1]
    assert (last.meta_status, last.meta_last_entry, last.w1.lac, last.w2.status) == \
        (ref.CLOSED, 0, 1, ref.CLOSED)
    assert res["trace"][-1]["action"] == "W2ClosesLedger"
    actions = [t["action"] for t in res["trace"]]
    assert actions.count("W2CompletesReadWithNoSuchEntry") == 1 and "W2CompletesReadSuccessfully" not in actions


@pytest.mark.long
def test_ensemble_changes_complete_search_matches_reference(capsys, tmp_path):
    # Two bookies with WQ = AQ = 1: a lost add lets w1 (or w2) replace the bookie, so ensemble
    # changes, pending-op resends and fragment lookups all occur. TLC (-deadlock) and the reference:
    # 1,307 distinct states, 3,081 generated, depth 25.
    code, res, err = check(capsys, tmp_path, "--set", "Bookies=b1,b2", "--set", "WriteQuorum=1",
                           "--set", "AckQuorum=1")
    want = ref.bfs(["b1", "b2"], 1, 1, 1, False)
    assert code == 0, err[-3000:]
    assert (res["result"], res["distinct_states"], res["states_generated"], res["depth"]) == \
        (want["result"], want["distinct"], want["generated"], want["depth"]) == ("ok", 1307, 3081, 25)


@pytest.mark.long
@pytest.mark.parametrize("constants", [
    (["b1", "b2"], 1, 1, 1, True),       # ensemble changes, resends, two fragments (1,307 states)
])
def test_every_action_on_every_reachable_state(spark, constants):
    """Fixture test of all the SQL actions at once: the frontier is every reachable state of a small
    configuration; the successors the SQL gives (with their actions) must be exactly the spec's."""
    from engine.search.expand import PARENT_TYPE
    from pyspark.sql.types import StructField, StructType

    spec, states = ref.reachable(*constants)
    cm = _compiled(spark, constants)
    schema = StructType([*cm.schema.fields, StructField("_parent", PARENT_TYPE)])
    rows = [{**ref.to_row(s), "_parent": {"fp": 0, "fp2": 0, "ord": i}} for i, s in enumerate(states)]
    frontier = spark.createDataFrame(rows, schema)
    got = collections.Counter()
    for r in cm.successors(spark, frontier).collect():
        d = r.asDict(recursive=True)
        got[(d["_parent_ord"], d["_action"], ref.from_row(d))] += 1
    want = collections.Counter((i, a, t) for i, s in enumerate(states) for a, t in spec.successors(s))
    assert sum(got.values()) == sum(want.values())
    assert got == want



def _compiled(spark, constants):
    from engine.search.expand import compile_model
    from engine.model.loader import load_model, resolve_run
    from engine.runtime.session import declare_constants

    bookies, wq, aq, sl, rrf = constants
    model = load_model(MODEL)
    run = resolve_run(model, sets=[f"Bookies={','.join(bookies)}", f"WriteQuorum={wq}", f"AckQuorum={aq}",
                                   f"SendLimit={sl}", f"RecoveryReadsFence={'TRUE' if rrf else 'FALSE'}"])
    declare_constants(spark, model, run.constants)
    return compile_model(spark, model)


@pytest.mark.long
def test_tlc_counterexample_replays_through_the_sql(spark):
    """Fixture test from TLC's own 20-state counterexample (fixtures/tlc/bk_v413.txt): from
    each of TLC's states the SQL action TLC names yields TLC's next state, and of the cfg's
    invariants only NoDivergenceBetweenWriterAndMetaData fails, in the last state only."""
    from engine.search.expand import PARENT_TYPE
    from pyspark.sql.types import StructField, StructType

    steps = ref.parse_tlc_trace(TLC_TRACE, ["b1", "b2", "b3"])
    assert len(steps) == 20
    cm = _compiled(spark, (["b1", "b2", "b3"], 3, 2, 1, False))
    schema = StructType([*cm.schema.fields, StructField("_parent", PARENT_TYPE)])
    rows = [{**ref.to_row(s), "_parent": {"fp": 0, "fp2": 0, "ord": i}} for i, (_, s) in enumerate(steps[:-1])]
    succ = {(r["_parent_ord"], r["_action"], ref.from_row(r.asDict(recursive=True)))
            for r in cm.successors(spark, spark.createDataFrame(rows, schema)).collect()}
    for i, (action, state) in enumerate(steps[1:]):
        assert (i, action, state) in succ, f"TLC's step {i + 2} ({action}) is not a successor in SQL"

    states = spark.createDataFrame([ref.to_row(s) for _, s in steps], cm.schema)
    names = list(cm.invariant_exprs)
    held = states.selectExpr(*[f"{cm.invariant_exprs[n]} AS `{n}`" for n in names]).collect()
    assert names == ref.INVARIANTS
    assert [[n for n in names if not r[n]] for r in held] == [[]] * 19 + [["NoDivergenceBetweenWriterAndMetaData"]]
