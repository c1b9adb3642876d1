"""Pulsar topic compaction (compaction.tla) against TLC's figures and traces (fixtures/tlc), against an
independent Python search for other constants, and the counterexample outputs: TLC-like text, ITF
(parsed back with itf-py), rows in the run's Delta table, and replay of stored and TLC traces."""
import json
from pathlib import Path

import itf_py
import pytest
from deltalake import DeltaTable

from conftest import FIXTURES, run_cli
from pulsar_reference import explore

# TLC's counterexamples for the oracle's configurations, as TLC printed them.
TRACES = FIXTURES / "tlc"
MODEL = "pulsar_compaction"
CONSTS = ["MessageSentLimit", "CompactionTimesLimit", "ModelConsumer", "ConsumeTimesLimit", "KeySpace",
          "ValueSpace", "RetainNullKey", "MaxCrashTimes", "ModelProducer"]


def check_json(capsys, wh, *args):
    code, out, err = run_cli(capsys, "check", MODEL, "--warehouse", str(wh), "--json", "--quiet", *args)
    assert out.strip(), err[-3000:]
    return code, json.loads(out)


def oracle_actions(name):
    from engine.traces.tlc_text import read_tlc_trace
    return [s["#action"] for s in read_tlc_trace(TRACES / f"{name}.txt")]


@pytest.mark.parametrize("config, distinct, generated, depth", [
    ("pc_c2", 45_198, 60_507, 20),     # TLC's figures for the oracle's configurations
    pytest.param("pc_c3", 276_608, 479_747, 23, marks=pytest.mark.long),
])
def test_oracle_configurations(capsys, tmp_path, config, distinct, generated, depth):
    code, res = check_json(capsys, tmp_path / "wh", "--config", config)
    assert code == 0
    assert (res["result"], res["distinct_states"], res["states_generated"], res["depth"]) == \
        ("ok", distinct, generated, depth)
    levels = DeltaTable(res["tables"]["levels"]).to_pyarrow_table().to_pylist()
    # ModelProducer = FALSE: Init is a set of 729 states (every pre-generated message sequence)
    assert min(levels, key=lambda r: r["depth"])["new_states"] == (729 if config == "pc_c2" else 1)


@pytest.mark.parametrize("consts", [
    # every constant away from the oracle's values: consumer stutter, no null keys retained, two crashes, producer
    dict(MessageSentLimit=2, CompactionTimesLimit=2, ModelConsumer=True, ConsumeTimesLimit=0, KeySpace=[3],
         ValueSpace=[1], RetainNullKey=False, MaxCrashTimes=2, ModelProducer=True),
    pytest.param(dict(MessageSentLimit=2, CompactionTimesLimit=2, ModelConsumer=False, ConsumeTimesLimit=2, KeySpace=[1, 5],
         ValueSpace=[2], RetainNullKey=True, MaxCrashTimes=0, ModelProducer=False), marks=pytest.mark.long),
])
def test_other_constants_match_an_independent_search(capsys, tmp_path, consts):
    want = explore(**consts)
    sets = []
    for k, v in consts.items():
        text = ",".join(map(str, v)) if isinstance(v, list) else ("TRUE" if v is True else "FALSE" if v is False else str(v))
        sets += ["--set", f"{k}={text}"]
    code, res = check_json(capsys, tmp_path / "wh", *sets)
    assert code == 0 and res["result"] == "ok"
    assert (res["distinct_states"], res["states_generated"], res["depth"]) == \
        (want["distinct"], want["generated"], want["depth"])


def test_no_message_and_no_crash_is_a_deadlock(capsys, tmp_path):
    code, res = check_json(capsys, tmp_path / "wh", "--set", "MessageSentLimit=0", "--set", "MaxCrashTimes=0")
    assert code == 11 and res["result"] == "deadlock"
    assert [s["action"] for s in res["trace"]] == ["Init"]


def test_duplicate_null_key_message_shortest_trace(capsys, tmp_path):
    # the invariants chosen on the command line, as TLC's cfg INVARIANT lines do
    code, res = check_json(capsys, tmp_path / "wh", "--invariant", "TypeSafe", "--invariant",
                           "CompactionHorizonCorrectness", "--invariant", "DuplicateNullKeyMessage")
    assert res["invariants"] == ["TypeSafe", "CompactionHorizonCorrectness", "DuplicateNullKeyMessage"]
    assert code == 12 and res["violated_invariant"] == "DuplicateNullKeyMessage"
    assert [s["action"] for s in res["trace"]] == oracle_actions("pc_c_DuplicateNullKeyMessage")
    assert len(res["trace"]) == 4


def test_compacted_ledger_leak_trace_in_three_forms_and_replay(capsys, tmp_path):
    wh = tmp_path / "wh"
    itf_copy = tmp_path / "leak.itf.json"
    code, out, err = run_cli(capsys, "check", MODEL, "--config", "pc_c_CompactedLedgerLeak", "--warehouse", str(wh),
                             "--quiet", "--itf", str(itf_copy))
    assert code == 12, err[-2000:]
    # 1. the TLC-like text view
    assert "Error: Invariant CompactedLedgerLeak is violated." in out
    assert "State 12: <CompactorPhaseTwoWrite>" in out and "State 13:" not in out
    want = oracle_actions("pc_c_CompactedLedgerLeak")
    assert len(want) == 12

    # 2. ITF, parsed back by itf-py
    trace = itf_py.trace_from_json(json.loads(itf_copy.read_text()))
    assert trace.vars[:2] == ["messages", "compactedLedgers"] and len(trace.states) == 12
    assert [s.meta["action"] for s in trace.states] == want
    last = trace.states[-1].values
    assert sum(1 for ledger in last["compactedLedgers"] if ledger != "Nil") == 3
    assert last["compactorState"] == "Compactor_In_PhaseTwoUpdateContext" and last["crashTimes"] == 1
    assert trace.states[0].values["phaseOneResult"] == "Nil"

    # 3. rows of the run's Delta table: SELECT over the run shows the trace
    code, res = check_json(capsys, wh, "--config", "pc_c_CompactedLedgerLeak")
    assert res["from_cache"] and len(res["trace"]) == 12
    from engine.runtime.session import get_spark
    spark = get_spark()
    from deltalake import DeltaTable as DT
    files = DT(res["tables"]["trace"]).file_uris()
    rows = spark.read.parquet(*files).createOrReplaceTempView("leak_trace")
    rows = spark.sql("SELECT step, action, size(filter(compactedLedgers, l -> l IS NOT NULL)) AS n "
                     "FROM leak_trace ORDER BY step").collect()
    assert [r["action"] for r in rows] == want and rows[-1]["n"] == 3 and rows[0]["step"] == 1

    # replay: our own trace (by run id, and by ITF file), then TLC's trace, then a tampered one
    code, out, _ = run_cli(capsys, "replay", res["run_id"], "--warehouse", str(wh), "--json")
    rep = json.loads(out)
    assert code == 0 and rep["legal"] and rep["length"] == 12
    assert rep["steps"][-1]["failed_invariants"] == ["CompactedLedgerLeak"]
    assert all(not s["failed_invariants"] for s in rep["steps"][:-1])

    code, out, _ = run_cli(capsys, "replay", str(TRACES / "pc_c_CompactedLedgerLeak.txt"), "--tlc",
                           "--model", MODEL, "--config", "pc_c_CompactedLedgerLeak", "--json")
    rep = json.loads(out)
    assert code == 0 and rep["legal"], rep
    assert [s["actions"][0] for s in rep["steps"]] == want

    doc = json.loads(itf_copy.read_text())
    doc["states"][6]["compactorState"] = "Compactor_In_PhaseTwoWrite"   # state 7 skips DeleteLedger's effect
    bad = tmp_path / "tampered.itf.json"
    bad.write_text(json.dumps(doc))
    code, out, _ = run_cli(capsys, "replay", str(bad))
    assert code == 13
    assert "[BAD] state 7" in out and "differs in compactorState" in out
    assert "state 7 is not reachable from the state before it" in out


def test_bad_constants_are_refused_before_anything_is_written(capsys, tmp_path):
    wh = tmp_path / "wh"
    code, out, err = run_cli(capsys, "check", MODEL, "--warehouse", str(wh), "--set", "KeySpace=0,1")
    assert code == 2
    assert "ASSUME ConstantsAssumption" in err and "ConstantsAssumption.sql" in err and "KeySpace={0, 1}" in err
    assert not (wh / MODEL).exists()
    code, out, err = run_cli(capsys, "check", MODEL, "--warehouse", str(wh), "--set", "ModelProducer=3")
    assert code == 2 and "constant ModelProducer has type bool: '3' is not TRUE or FALSE" in err
    code, out, err = run_cli(capsys, "check", MODEL, "--warehouse", str(wh), "--invariant", "NoSuchInvariant")
    assert code == 2 and "has no invariant 'NoSuchInvariant'" in err


def test_replay_rejects_malformed_traces(capsys, tmp_path):
    bad = tmp_path / "x.itf.json"
    bad.write_text("{not json")
    code, _, err = run_cli(capsys, "replay", str(bad), "--model", MODEL)
    assert code == 2 and f"{bad}: not an ITF trace" in err
    bad.write_text(json.dumps({"vars": ["messages"], "states": [{"messages": []}]}))
    code, _, err = run_cli(capsys, "replay", str(bad), "--model", MODEL)
    assert code == 2 and "state 1 has no value for" in err and "compactedLedgers" in err
