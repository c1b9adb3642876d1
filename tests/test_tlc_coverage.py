"""Every action's generated count against TLC's coverage (docs/generated-counts.md).

Each fixture in tests/fixtures/tlc_coverage/ is TLC's whole output for the .cfg beside it, run with
``-coverage 1 -workers 1`` (and ``-deadlock`` where the model's configuration turns deadlock
checking off) by a TLC built from the tlaplus repository against the specs' repositories at the
oracle's commits (docs/generated-counts.md says how). The engine runs the
schema's configuration of the same constants; each action's ``actions_generated`` must equal TLC's
figure for that action, and the totals (distinct, generated, depth) TLC's.

What TLC's coverage counts for an action: every successor the action hands to the worker
(tlc2/tool/Worker.java addElement), before the state constraint and the seen-state check, so
duplicates and successors outside a CONSTRAINT count. ``<Init ...>: distinct:generated`` is the
initial states, which the total includes. A CONSTRAINT gets a line of the same form (how many states
it was evaluated on), which is not an action.
"""
import json
import re
from pathlib import Path

import pytest

from conftest import run_cli

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "tlc_coverage"

# TLC's coverage line of an action: <Name line .., col .. to line .., col .. of module M>: distinct:generated,
# with " (l1 c1 l2 c2)", the location of the action's formula, when the definition named is not the
# action's whole formula (a disjunct of it, or a LET's body).
COVERAGE_LINE = re.compile(r"^<(\w+) line \d+, col \d+ to line \d+, col \d+ of module \w+"
                           r"(?: \((\d+ \d+ \d+ \d+)\))?>: (\d+):(\d+)$")

# TLC labels an action by the operator definition it was taken from, which is not always the action
# the engine names (docs/generated-counts.md, "How TLC splits Next into actions"). A label maps to
# the engine's action by its name, or by its name and location where one name covers several
# actions; labels mapped to None are not actions. Several labels may map to one action and their
# counts add up: Kip279's two disjuncts of BecomeFollowerTruncateKip279 are two TLC actions, both
# labelled BecomeFollowerTruncateKip279 with their locations; the engine has one action.
LABELS = {
    # KafkaTruncateToHighWatermark's step applies BecomeFollowerAndTruncateTo to a state-level
    # argument (replicaState[replica].hw), so TLC's action is that operator's application.
    "kafka_truncate_to_hw": {"BecomeFollowerAndTruncateTo": "BecomeFollowerTruncateToHighWatermark"},
    # Ledger chaining's state constraint md_next_lid < 3 (LC_lim3.tla, beside the fixture).
    "ledger_chaining": {"LedgerLimit3": None},
    # Next's disjuncts /\ ModelProducer /\ Producer and /\ ModelConsumer /\ Consumer are conjunctions,
    # so TLC names them after Next, with their locations in compaction.tla.
    "pulsar_compaction": {"Next (218 8 219 18)": "Producer", "Next (229 8 230 18)": "Consumer"},
}


def tlc_coverage(path: Path) -> tuple[dict[str, int], dict[str, int]]:
    """TLC's per-label generated counts (labels as in LABELS) and its totals."""
    text = path.read_text()
    assert "Model checking completed. No error has been found." in text, path
    # -coverage 1 also reports every minute while the search runs: the final report is the last.
    report = text[text.rindex("The coverage statistics at"):]
    labels = {}
    for line in report.splitlines():
        m = COVERAGE_LINE.match(line)
        if m:
            name, where, _distinct, generated = m.groups()
            label = f"{name} ({where})" if where else name
            labels[label] = labels.get(label, 0) + int(generated)
    m = re.search(r"^([\d,]+) states generated, ([\d,]+) distinct states found, 0 states left on queue\.$", text, re.M)
    totals = dict(zip(("generated", "distinct"), (int(x.replace(",", "")) for x in m.groups())))
    totals["depth"] = int(re.search(r"^The depth of the complete state graph search is (\d+)\.$", text, re.M).group(1))
    return labels, totals


def tlc_actions(model: str, labels: dict[str, int]) -> dict[str, int]:
    """TLC's generated counts by the engine's action names."""
    names = LABELS.get(model, {})
    out: dict[str, int] = {}
    for label, generated in labels.items():
        name = names[label] if label in names else names.get(label.split(" (")[0], label.split(" (")[0])
        if name is not None:
            out[name] = out.get(name, 0) + generated
    return out


# (fixture, model, engine configuration): the fixture's .cfg holds the same constants as the
# schema's configuration. In the default suite, a small configuration of each model whose steps
# include a split disjunction or witness (docs/generated-counts.md), and of ledger chaining and
# Pulsar (a state constraint, stuttering steps, Next's conjunctions as actions); the rest, minutes
# on 2 cores together, in the long runs.
CASES = [
    ("kafka_truncate_to_hw_S", "kafka_truncate_to_hw", "S"),
    ("kafka_kip279_S", "kafka_kip279", "S"),
    ("kafka_kip320_S", "kafka_kip320", "S"),
    ("ledger_chaining_c2_lim3", "ledger_chaining", "lc_c2_lim3"),
    ("pulsar_compaction_cov", "pulsar_compaction", "pc_cov"),
    # Recovery adds to an unfenced bookie, and ensemble changes with two valid ensembles.
    ("bookkeeper_v4_13_3b_wq1", "bookkeeper_v4_13", "bk_v413_3b_wq1"),
]
LONG_CASES = [
    ("kafka_kip101_S", "kafka_kip101", "S"),
    ("kafka_kip320_first_try_S", "kafka_kip320_first_try", "S"),
    # The configuration: FencedLeaderShrinkIsr's two disjuncts, 3,040 generated in TLC.
    ("kafka_kip320_A", "kafka_kip320", "A"),
    # The master protocol: recovery adds to an unfenced bookie; then with a third bookie, ensemble
    # changes with two valid ensembles; then with two entries, pending ops behind an appended
    # fragment (NeedsResend's two disjuncts both hold).
    ("bookkeeper_2b_wq1", "bookkeeper", "bk_2b_wq1"),
    ("bookkeeper_3b_wq1", "bookkeeper", "bk_3b_wq1"),
    ("bookkeeper_2b_wq1_s2", "bookkeeper", "bk_2b_wq1_s2"),
]


def check(capsys, tmp_path, model, config):
    code, out, err = run_cli(capsys, "check", model, "--config", config, "--warehouse", str(tmp_path / "wh"),
                             "--json", "--quiet")
    assert out.strip(), err[-3000:]
    res = json.loads(out)
    assert code == 0 and res["result"] == "ok", err[-3000:]
    return res


@pytest.mark.parametrize("fixture, model, config",
                         [*CASES, *(pytest.param(*c, marks=pytest.mark.long) for c in LONG_CASES)],
                         ids=[c[0] for c in [*CASES, *LONG_CASES]])
def test_every_action_generates_what_tlc_generates(capsys, tmp_path, fixture, model, config):
    labels, totals = tlc_coverage(FIXTURES / f"{fixture}.txt")
    want = tlc_actions(model, labels)
    res = check(capsys, tmp_path, model, config)
    got = res["actions_generated"]
    # An action TLC lists with 0 may be absent from the engine's figures, and the other way round.
    assert {a: n for a, n in got.items() if n} == {a: n for a, n in want.items() if n}
    assert set(got) <= set(want), f"actions TLC does not have: {set(got) - set(want)}"
    assert (res["distinct_states"], res["states_generated"], res["depth"]) == \
        (totals["distinct"], totals["generated"], totals["depth"])
    assert sum(want.values()) == totals["generated"]
