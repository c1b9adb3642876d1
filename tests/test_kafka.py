"""Kafka replication, five protocol versions, against TLC's figures for configuration A
(shared/oracle/README.md, Kafka section; every run with TLC's -deadlock, each invariant checked in
its own run together with the type check, as the reference runs did)."""
import json

import pytest

from conftest import run_cli

# TLC's labels for the shortest counterexamples (shared/oracle/traces/kafka_*.txt) where the engine
# meets the same path (for Kip101 StrongIsr it finds another trace of the same length). TLC names the
# operator it evaluated, so a step of BecomeFollowerTruncateToHighWatermark reads
# BecomeFollowerAndTruncateTo there.
TLC_TRACES = {
    ("kafka_truncate_to_hw", "A_weak"): [
        "Init", "ControllerElectLeader", "ControllerShrinkIsr", "BecomeLeader", "LeaderWrite",
        "BecomeFollowerTruncateToHighWatermark", "FollowerReplicate", "LeaderIncHighWatermark",
        "BecomeFollowerTruncateToHighWatermark"],
    ("kafka_truncate_to_hw", "A_strong"): [
        "Init", "ControllerElectLeader", "ControllerElectLeader", "ControllerElectLeader", "BecomeLeader",
        "LeaderWrite", "BecomeFollowerTruncateToHighWatermark", "FollowerReplicate", "LeaderIncHighWatermark",
        "BecomeFollowerTruncateToHighWatermark"],
    ("kafka_kip101", "A_weak"): [
        "Init", "ControllerElectLeader", "ControllerElectLeader", "ControllerElectLeader", "BecomeLeader",
        "LeaderWrite", "BecomeFollowerTruncateKip101", "FollowerReplicate", "LeaderIncHighWatermark",
        "BecomeLeader", "LeaderWrite", "BecomeFollowerTruncateKip101"],
}

# (model, configuration, result, violated invariant, distinct, depth, trace length): TLC's figures.
ORACLE = [
    ("kafka_truncate_to_hw", "A_weak", "invariant_violated", "WeakIsr", None, None, 9),
    ("kafka_truncate_to_hw", "A_strong", "invariant_violated", "StrongIsr", None, None, 10),
    ("kafka_truncate_to_hw", "A_LeaderInIsr", "invariant_violated", "LeaderInIsr", None, None, 1),
    ("kafka_kip101", "A_weak", "invariant_violated", "WeakIsr", None, None, 12),
    ("kafka_kip101", "A_strong", "invariant_violated", "StrongIsr", None, None, 12),
    ("kafka_kip279", "A", "ok", None, 53_099, 21, None),
    ("kafka_kip320_first_try", "A", "ok", None, 46_465, 21, None),
    ("kafka_kip320", "A", "ok", None, 28_939, 22, None),
]


def run(capsys, tmp_path, model, config, *extra):
    code, out, err = run_cli(capsys, "check", model, "--config", config, "--warehouse", str(tmp_path / "wh"),
                             "--json", "--quiet", *extra)
    assert out.strip(), err
    return code, json.loads(out)


# In the default suite: the shortest violation of the oldest version and the initial-state finding; the
# other rows (minutes each on 2 cores) run with SSE_LONG_TESTS=1.
QUICK = {("kafka_truncate_to_hw", "A_weak"), ("kafka_truncate_to_hw", "A_LeaderInIsr")}


@pytest.mark.parametrize("model,config,result,invariant,distinct,depth,trace",
                         [pytest.param(*row, marks=() if row[:2] in QUICK else pytest.mark.long) for row in ORACLE],
                         ids=[f"{m}-{c}" for m, c, *_ in ORACLE])
def test_matches_tlc(capsys, tmp_path, model, config, result, invariant, distinct, depth, trace):
    code, res = run(capsys, tmp_path, model, config)
    assert res["result"] == result
    assert not res["deadlock_check"]
    if result == "ok":
        assert code == 0
        assert (res["distinct_states"], res["depth"]) == (distinct, depth)
    else:
        assert code == 12
        assert res["violated_invariant"] == invariant
        assert len(res["trace"]) == trace
        steps = [s["action"] for s in res["trace"]]
        assert steps[0] == "Init"
        if (model, config) in TLC_TRACES:
            assert steps == TLC_TRACES[(model, config)]
        # the last state breaks the invariant, every earlier one satisfies it
        assert res["trace"][-1]["state"] is not None
