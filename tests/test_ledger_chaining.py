"""Ledger chaining against TLC's figures (shared/oracle: lc_c3_lim4)."""
import json
import os
import signal
import subprocess
import sys

import pyarrow.compute as pc
import pytest
import yaml
from deltalake import DeltaTable

from conftest import setting_args, ROOT, run_cli, seen_index_everywhere

# TLC, LedgerChaining.tla, Clients = {c1,c2,c3}, CONSTRAINT md_next_lid < 4 (shared/oracle/README.md)
TLC_DISTINCT, TLC_GENERATED, TLC_DEPTH = 375_963, 2_207_914, 40


def _cli(*args):
    return [sys.executable, "-m", "engine", "check", "ledger_chaining", *args]


# Long: the default suite resumes this configuration to TLC's figures through the engine server
# (tests/test_server.py), and kills runs with SIGKILL at every commit point (tests/test_platform_resume.py).
@pytest.mark.long
def test_default_configuration_survives_kill_9_and_matches_tlc(capsys, tmp_path):
    """The README's command killed (SIGKILL) after level 12, then started again: it resumes to TLC's
    figures with every state once. The killed run is a process of its own; the resume and the audit
    run in this one (the suite's Spark session: a second cold JVM would only add its start-up)."""
    wh = tmp_path / "wh"
    proc = subprocess.Popen(_cli("--warehouse", str(wh)), cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    killed_after = None
    for line in proc.stderr:
        if line.startswith("Progress(12)"):
            os.kill(proc.pid, signal.SIGKILL)
            killed_after = 12
            break
    proc.wait()
    assert killed_after == 12, "the run ended before it could be killed"

    code, out, err = run_cli(capsys, "check", "ledger_chaining", "--warehouse", str(wh), "--json", "--quiet")
    assert code == 0, err[-3000:]
    res = json.loads(out)
    assert res["resumed_from_depth"] >= 12
    assert (res["result"], res["distinct_states"], res["states_generated"], res["depth"]) == \
        ("ok", TLC_DISTINCT, TLC_GENERATED, TLC_DEPTH)
    assert res["violated_invariant"] is None and res["trace"] == []

    states = DeltaTable(res["tables"]["states"]).to_pyarrow_table(columns=["_fp", "_fp2", "_depth"])
    assert states.num_rows == TLC_DISTINCT
    keys = pc.binary_join_element_wise(pc.cast(states["_fp"], "string"), pc.cast(states["_fp2"], "string"), "/")
    assert pc.count_distinct(keys).as_py() == TLC_DISTINCT
    assert pc.max(states["_depth"]).as_py() == TLC_DEPTH
    levels = DeltaTable(res["tables"]["levels"]).to_pyarrow_table().to_pylist()
    assert sorted(r["depth"] for r in levels) == list(range(1, TLC_DEPTH + 1))
    assert sum(r["new_states"] for r in levels) == TLC_DISTINCT

    code, out, err = run_cli(capsys, "audit", res["run_id"], "--warehouse", str(wh), "--json")
    assert code == 0, out + err[-2000:]
    assert json.loads(out)["success"] is True


def test_violation_gives_shortest_trace_stored_in_delta(capsys, tmp_path, model_copy):
    sql = model_copy / "actions_sql" / "ledger_chaining" / "invariants" / "FewerThanTwoLedgers.sql"
    sql.write_text("-- test-only invariant: md_next_lid < 3\nmd_next_lid < 3\n")
    schema_path = model_copy / "schemas" / "ledger_chaining.yml"
    schema = yaml.safe_load(schema_path.read_text())
    schema["invariants"].append("FewerThanTwoLedgers")
    schema_path.write_text(yaml.safe_dump(schema, sort_keys=False))

    code, out, err = run_cli(capsys, "--models", str(model_copy), "check", "ledger_chaining",
                             "--warehouse", str(tmp_path / "wh"), "--invariant", "TypeOK",
                             "--invariant", "FewerThanTwoLedgers", "--json")
    assert code == 12, err[-3000:]
    res = json.loads(out)
    assert res["result"] == "invariant_violated" and res["violated_invariant"] == "FewerThanTwoLedgers"
    # Two CreateLedger steps, each preceded by becoming leader and reading the (empty) list: 8 states.
    actions = [t["action"] for t in res["trace"]]
    assert len(actions) == 8 and actions[0] == "Init" and actions[-1] == "CreateLedger"
    assert actions.count("CreateLedger") == 2
    assert res["trace"][-1]["state"]["md_next_lid"] == 3
    assert all(t["state"]["md_next_lid"] < 3 for t in res["trace"][:-1])
    assert res["depth"] == 8

    states = DeltaTable(res["tables"]["states"]).to_pyarrow_table().to_pylist()
    stored = {json.dumps({k: s[k] for k in res["trace"][0]["state"]}, sort_keys=True) for s in states}
    for step in res["trace"]:
        assert json.dumps(step["state"], sort_keys=True) in stored
    trace_rows = DeltaTable(res["tables"]["trace"]).to_pyarrow_table().to_pylist()
    assert [r["action"] for r in sorted(trace_rows, key=lambda r: r["step"])] == actions


def test_ledger_limit_is_a_constant(capsys, tmp_path):
    # md_next_lid < 2: the successor that creates a ledger falls outside the constraint, so no
    # stored state has one.
    code, out, err = run_cli(capsys, "check", "ledger_chaining", "--warehouse", str(tmp_path / "wh"),
                             "--set", "Clients=c1", "--set", "LedgerLimit=2", "--json")
    assert code == 0, err[-2000:]
    res = json.loads(out)
    states = DeltaTable(res["tables"]["states"]).to_pyarrow_table(columns=["md_next_lid"])
    assert pc.max(states["md_next_lid"]).as_py() == 1
    assert res["constants"] == {"Clients": ["c1"], "LedgerLimit": 2}


@pytest.mark.long
def test_seen_index_gives_the_same_counts(capsys, tmp_path, monkeypatch):
    """Leader changes revisit states met many levels earlier, so every seen state must be found.
    The seen index (engine.search.seen) from the first level on gives the plain anti-join's figures: as
    sorted runs (engine/runtime/jvm/SortedSeen.java), merged as levels come and partitioned anew as they
    grow, the levels' fingerprints held on the driver or made fragments; first made from the
    driver's copy of the fingerprints as it lets that copy go; and as the rows' fragments
    (sorted_seen off, the engine without its JVM classes), merged every other level and re-partitioned."""
    import engine.accel.seen_index as seen

    def run(tag, **settings):
        code, out, err = run_cli(capsys, *setting_args(**settings), "check", "ledger_chaining",
                                 "--warehouse", str(tmp_path / tag), "--set", "Clients=c1,c2",
                                 "--set", "LedgerLimit=2", "--json", "--quiet")
        assert code == 0, err[-2000:]
        res = json.loads(out)
        return res["distinct_states"], res["states_generated"], res["depth"]

    plain = run("plain")
    # Levels alternating between the driver (engine.search.arrow_level) and Spark's stages: each anti-joins
    # against seen states the other stored.
    assert run("alternating", level_path="alternate") == plain
    # Sorted runs partitioned anew past 4 fingerprints a run (50 states: from 2 partitions to 32).
    index, parts = seen_index_everywhere(monkeypatch, rows_per_partition=20, run_max=4)
    assert run("index", level_path="alternate", **index) == plain
    assert len(parts) >= 3 and parts == sorted(parts)  # the counts above held across every re-partition
    # Every level in Spark, its keys kept there: each level indexed from its candidates in Spark.
    assert run("index_spark", **{**index, "level_path": "spark", "narrow_on_driver": 0}) == plain
    assert run("index_driver", level_path="driver", **index) == plain
    # The driver lets its copy of the seen fingerprints go past 20 states and the index is first
    # made from that copy (SeenIndex.add_pairs), not from the stored levels: levels on the driver
    # (each level's fingerprints then held on the driver, SeenIndex.hold, none made a fragment),
    # then alternating with Spark's stages (which make the held ones a fragment first).
    from_driver = {**index, "driver_seen_max": 20, "pending_max": 10 ** 6}
    made = []
    real = seen.SeenIndex.add_pairs
    monkeypatch.setattr(seen.SeenIndex, "add_pairs", lambda self, *a: made.append(real(self, *a)) or made[-1])
    assert run("index_from_driver", level_path="driver", **from_driver) == plain and made == [True]
    made.clear()
    assert run("index_from_driver_alternating", level_path="alternate", **from_driver) == plain and made == [True]
    parts.clear()
    assert run("index_rows", level_path="alternate", sorted_seen=False, **from_driver) == plain and not parts
