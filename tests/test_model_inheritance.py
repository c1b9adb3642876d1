"""Models that extend another model (``extends:``, ``abstract:``, action edits): loading, the SQL
search path, the digest, bad input, and a derived toy model checked against a Python search."""
import json
import shutil

import pytest
import yaml

from conftest import ROOT, TEST_MODELS, run_cli
from engine.errors import ModelError, UsageError
from engine.model.loader import load_model, resolve_run


@pytest.fixture
def toy(tmp_path):
    """A writable copy of the toy models, plus a derived counter that may also double x."""
    root = tmp_path / "models"
    shutil.copytree(TEST_MODELS, root)
    (root / "schemas" / "counter_double.yml").write_text(
        "name: counter_double\n"
        "extends: counter\n"
        "actions: {add: [Double]}\n"
        "configurations:\n"
        "  small: {constants: {Steps: [1], Max: 6}, invariants: [], deadlock: false}\n"
        "default_configuration: small\n")
    d = root / "actions_sql" / "counter_double"
    d.mkdir()
    (d / "Double.sql").write_text(
        "-- Counter.tla: Double (test action)\n"
        "SELECT 2 * x AS x, array_sort(array_distinct(array_append(visited, 2 * x))) AS visited, _parent\n"
        "FROM frontier WHERE x > 0 AND 2 * x <= Max\n")
    return root


def write_schema(root, name, text):
    (root / "schemas" / f"{name}.yml").write_text(text)
    return root / "schemas" / f"{name}.yml"


def test_derived_model_inherits_and_edits(toy):
    base, m = load_model("counter", toy), load_model("counter_double", toy)
    assert [a.name for a in m.actions] == ["Step", "Double"]
    assert m.actions[0].path == toy / "actions_sql" / "counter" / "Step.sql"
    assert m.actions[1].path == toy / "actions_sql" / "counter_double" / "Double.sql"
    assert m.extends == ("counter",) and not m.abstract
    assert list(m.constants) == list(base.constants) and m.variables == base.variables
    assert m.invariants.keys() == base.invariants.keys() and m.constraints.keys() == base.constraints.keys()
    assert set(m.configurations) == {"default", "no_deadlock", "small"} and m.default_configuration == "small"
    assert m.digest != base.digest


def test_kafka_versions_keep_next_order():
    shared = ["ControllerElectLeader", "ControllerShrinkIsr", "BecomeLeader"]
    order = {
        "kafka_truncate_to_hw": shared + ["LeaderExpandIsr", "LeaderShrinkIsr", "LeaderWrite", "LeaderIncHighWatermark",
                                          "BecomeFollowerTruncateToHighWatermark", "FollowerReplicate"],
        "kafka_kip279": shared + ["LeaderExpandIsr", "LeaderShrinkIsr", "LeaderWrite", "LeaderIncHighWatermark",
                                  "BecomeFollowerTruncateKip279", "FollowerReplicate"],
        "kafka_kip320_first_try": shared + ["LeaderExpandIsrBetterFencing", "LeaderShrinkIsrBetterFencing", "LeaderWrite",
                                            "ImprovedLeaderIncHighWatermark", "BecomeFollower", "FollowerFetch",
                                            "FollowerTruncate"],
        "kafka_kip320": shared + ["FencedLeaderExpandIsr", "FencedLeaderShrinkIsr", "LeaderWrite",
                                  "FencedLeaderIncHighWatermark", "FencedBecomeFollowerAndTruncate",
                                  "FencedFollowerFetch"],
    }
    for name, want in order.items():
        m = load_model(name)
        assert [a.name for a in m.actions] == want, name
        # shared actions come from the base's folder, written once
        assert m.actions[0].path == ROOT / "actions_sql" / "kafka_replication" / "ControllerElectLeader.sql"
    assert load_model("kafka_kip320").extends == ("kafka_kip279", "kafka_replication")


def test_digest_covers_the_base(toy):
    before = load_model("counter_double", toy).digest
    step = toy / "actions_sql" / "counter" / "Step.sql"
    step.write_text(step.read_text() + "\n-- edited\n")
    after_sql = load_model("counter_double", toy).digest
    base_schema = toy / "schemas" / "counter.yml"
    base_schema.write_text(base_schema.read_text() + "\n# edited\n")
    after_schema = load_model("counter_double", toy).digest
    assert len({before, after_sql, after_schema}) == 3


def test_own_file_shadows_the_base(toy):
    own = toy / "actions_sql" / "counter_double" / "Step.sql"
    own.write_text((toy / "actions_sql" / "counter" / "Step.sql").read_text())
    assert load_model("counter_double", toy).actions[0].path == own


def test_own_invariant_shadows_the_base_in_its_folder(toy):
    """Each kind is looked up in its own subfolder, the derived model's first, then the base's; a file
    of the derived model outside its kind's folder is refused, not taken for the base's."""
    base = toy / "actions_sql" / "counter" / "invariants" / "Bounded.sql"
    assert load_model("counter_double", toy).invariants["Bounded"].path == base
    own = toy / "actions_sql" / "counter_double" / "invariants" / "Bounded.sql"
    own.parent.mkdir()
    own.write_text(base.read_text())
    assert load_model("counter_double", toy).invariants["Bounded"].path == own
    top = toy / "actions_sql" / "counter_double" / "Bounded.sql"
    own.rename(top)
    with pytest.raises(ModelError) as err:
        load_model("counter_double", toy)
    assert str(err.value) == f"{top}: Bounded is an invariant: move it to {own}"


@pytest.mark.parametrize("text,needle", [
    ("name: d\nextends: nobase\n", "'extends:' names unknown model 'nobase'"),
    ("name: d\nextends: d\n", "'extends:' makes a cycle: d -> d"),
    ("name: d\nextends: counter\nactions: {remove: [Jump]}\n",
     "'actions: remove:' names 'Jump', which the base model does not have (its actions: Step)"),
    ("name: d\nextends: counter\nactions: {replace: {Jump: Step2}}\n",
     "'actions: replace:' names 'Jump', which the base model does not have"),
    ("name: d\nextends: counter\nactions: {add_before: {Jump: [X]}}\n",
     "'actions: add_before:' names 'Jump'"),
    ("name: d\nextends: counter\nactions: {drop: [Step]}\n", "a mapping of edits with keys"),
    ("name: d\nextends: counter\nactions: {remove: [Step]}\n", "'actions:' is empty"),
    ("name: d\nextends: counter\nactions: {add: [Missing]}\n", "action 'Missing' has no SQL file"),
    ("name: d\nextends: counter\nvariables: {x: int}\n", "'variables:' are inherited from 'counter'"),
    ("name: d\nextends: [counter]\n", "'extends:' must name a base model"),
    ("name: d\nextends: counter\nabstract: maybe\n", "'abstract:' must be true or false"),
])
def test_bad_extends_names_the_schema(toy, text, needle):
    path = write_schema(toy, "d", text)
    with pytest.raises(ModelError) as err:
        load_model("d", toy)
    assert str(path) in str(err.value) and needle in str(err.value), str(err.value)


def test_cycle_through_two_models(toy):
    write_schema(toy, "a", "name: a\nextends: b\n")
    b = write_schema(toy, "b", "name: b\nextends: a\n")
    with pytest.raises(ModelError, match="makes a cycle: a -> b -> a") as err:
        load_model("a", toy)
    assert str(b) in str(err.value)


def test_stray_file_in_the_derived_folder(toy):
    (toy / "actions_sql" / "counter_double" / "Stray.sql").write_text("-- x\ntrue\n")
    with pytest.raises(ModelError, match="Stray.sql.*not declared"):
        load_model("counter_double", toy)


def test_abstract_model_is_refused(capsys, tmp_path):
    m = load_model("kafka_replication")
    assert m.abstract
    with pytest.raises(UsageError, match="abstract"):
        resolve_run(m)
    wh = tmp_path / "wh"
    code, _, err = run_cli(capsys, "check", "kafka_replication", "--warehouse", str(wh))
    assert code == 2 and "kafka_replication is abstract" in err and "kafka_replication.yml" in err
    assert not wh.exists()
    code, out, _ = run_cli(capsys, "models")
    assert code == 0 and "kafka_replication: Kafka partition replication" in out and "[abstract" in out
    assert "extends: kafka_kip279 -> kafka_replication" in out


def bfs_double(steps, max_):
    init = (0, (0,))
    seen, frontier, depth, generated = {init}, [init], 1, 1
    while frontier:
        nxt = []
        for x, vis in frontier:
            succ = [x + d for d in sorted(steps) if x + d <= max_] + ([2 * x] if 0 < x and 2 * x <= max_ else [])
            for y in succ:
                generated += 1
                t = (y, tuple(sorted(set(vis) | {y})))
                if t not in seen:
                    seen.add(t)
                    nxt.append(t)
        depth += bool(nxt)
        frontier = nxt
    return len(seen), generated, depth


def test_derived_model_runs(capsys, tmp_path, toy):
    code, out, err = run_cli(capsys, "--models", str(toy), "check", "counter_double", "--warehouse",
                             str(tmp_path / "wh"), "--json")
    assert code == 0, err
    res = json.loads(out)
    assert (res["distinct_states"], res["states_generated"], res["depth"]) == bfs_double({1}, 6)
