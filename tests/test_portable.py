"""The portable path (public PySpark APIs alone) against the same references as the accelerated one: the
test counter's independent search, TLC's figures and shortest counterexamples. And the local
accelerator's helpers disabled one at a time: each stage falls back to its portable form, says so,
and the figures stay the same."""
import json

import pyspark
import pytest
from deltalake import DeltaTable

from conftest import TEST_MODELS, run_cli, run_engine, setting_args
from test_counter import bfs
import engine.search.dedupe as dedupe
from engine.search.loop import ACCELERATOR_PYSPARK

PORTABLE = {"path": "portable"}
# The accelerator runs only on the PySpark line its hooks were checked on (engine.search.loop).
ACCELERATOR = pytest.mark.skipif(not pyspark.__version__.startswith(ACCELERATOR_PYSPARK),
                                 reason=f"no local accelerator on PySpark {pyspark.__version__}")
HELPERS = ["RowBytes", "SeenSet", "SortedSeen", "SwitchRows", "ArrowFrontier"]


def check(capsys, tmp_path, model, *args, settings=None, models=None):
    head = ["--models", str(models)] if models else []
    code, out, err = run_cli(capsys, *head, *setting_args(**(settings or {})), "check", model,
                             "--warehouse", str(tmp_path / "wh"), "--json", *args)
    assert out.strip(), err[-3000:]
    return code, json.loads(out), err


@ACCELERATOR
def test_the_first_line_says_which_path_runs(capsys, tmp_path):
    code, res, err = check(capsys, tmp_path, "counter", "--config", "no_deadlock", "--set", "Max=3",
                           settings=PORTABLE, models=TEST_MODELS)
    assert code == 0 and res["path"] == "portable"
    assert err.splitlines()[0] == "Search path: portable (asked for)"
    code, res, err = check(capsys, tmp_path / "a", "counter", "--config", "no_deadlock", "--set", "Max=3",
                           models=TEST_MODELS)
    assert code == 0 and res["path"] == "accelerated"
    assert err.splitlines()[0].startswith("Search path: accelerated (classic local mode")


def test_a_portable_levels_profile_names_its_stages_in_order(capsys, tmp_path):
    """With ``profile``, a level made whole again from narrow successors (``refetch_from`` 0) prints the
    wall time of each of its stages, the driver's planning apart from the jobs (docs/architecture.md)."""
    code, res, err = check(capsys, tmp_path, "counter", "--config", "no_deadlock", "--set", "Max=3",
                           settings={**PORTABLE, "profile": True, "refetch_from": 0}, models=TEST_MODELS)
    assert code == 0 and res["path"] == "portable", err[-2000:]
    line = next(ln for ln in err.splitlines() if ln.startswith("  profile depth 2: "))
    parts = [kv.split("=") for kv in line.split(": ", 1)[1].split()]
    assert [k for k, _ in parts] == ["read", "frontier", "plan", "expand", "counts", "firsts", "picked", "chosen",
                                     "acts", "refetch", "dedupe", "annotate", "to_driver", "order", "gx", "write",
                                     "commit"]
    assert all(float(v) >= 0 for _, v in parts)


# The portable path is in the default suite through the sliced level's tests (tests/test_slices.py:
# every level in Spark, the figures, the shortest deadlock and violation), Pulsar's shortest
# counterexample below (small levels on the driver) and the counter through Spark Connect.
@pytest.mark.parametrize("level_path,probe_max", [pytest.param("driver", None, marks=pytest.mark.long),
                                                   pytest.param("spark", None, marks=pytest.mark.long),
                                                   pytest.param("driver", 0, marks=pytest.mark.long)],
                         ids=["driver", "spark", "anti-join-shuffled"])
def test_the_counter_matches_the_reference_search(capsys, tmp_path, monkeypatch, level_path, probe_max):
    """Complete search, deadlock and violation with their shortest traces, with small levels finished
    on the driver (as Arrow, after Spark's de-duplication and anti-join) and with every level in Spark;
    and past ``dedupe.PROBE_MAX`` first rows, where the anti-join shuffles the stored fingerprints
    instead of probing them against the level's, broadcast."""
    if probe_max is not None:
        monkeypatch.setattr(dedupe, "PROBE_MAX", probe_max)
    settings = {**PORTABLE, "level_path": level_path}
    code, res, err = check(capsys, tmp_path, "counter", "--config", "no_deadlock", "--set", "Steps=1,3",
                           "--set", "Max=9", "--set", "Cap=6", settings=settings, models=TEST_MODELS)
    want = bfs({1, 3}, 9, cap=6, deadlock=False)
    assert code == 0, err[-2000:]
    assert (res["distinct_states"], res["states_generated"], res["depth"]) == \
        (want["distinct"], want["generated"], want["depth"])
    code, res, _ = check(capsys, tmp_path, "counter", "--set", "Steps=1,2", "--set", "Max=5", settings=settings,
                         models=TEST_MODELS)
    assert code == 11 and len(res["trace"]) == bfs({1, 2}, 5)["trace_length"]
    code, res, _ = check(capsys, tmp_path, "counter", "--no-deadlock", "--set", "Steps=1,2", "--set", "Max=8",
                         "--set", "Limit=5", settings=settings, models=TEST_MODELS)
    assert code == 12 and len(res["trace"]) == bfs({1, 2}, 8, limit=5, deadlock=False)["trace_length"]


def test_pulsar_shortest_counterexample_is_tlcs(capsys, tmp_path):
    from test_pulsar_compaction import oracle_actions
    code, res, err = check(capsys, tmp_path, "pulsar_compaction", "--config", "pc_c_DuplicateNullKeyMessage",
                           settings=PORTABLE)
    assert code == 12, err[-2000:]
    assert res["violated_invariant"] == "DuplicateNullKeyMessage"
    assert [s["action"] for s in res["trace"]] == oracle_actions("pc_c_DuplicateNullKeyMessage")


@pytest.mark.long
@pytest.mark.parametrize("model, args, figures", [
    ("ledger_chaining", (), (375_963, 2_207_914, 40)),
    ("pulsar_compaction", ("--config", "pc_c2"), (45_198, 60_507, 20)),
    ("kafka_kip320", ("--config", "A"), (28_939, None, 22)),
    ("bookkeeper", ("--config", "bk_master_2b_sym"), (71_528, 245_771, 28)),
], ids=["ledger_chaining", "pulsar_pc_c2", "kafka_kip320_A", "bookkeeper_2b_sym"])
def test_oracle_configurations_on_the_portable_path(capsys, tmp_path, model, args, figures):
    code, res, err = check(capsys, tmp_path, model, *args, "--quiet", settings=PORTABLE)
    assert code == 0, err[-2000:]
    distinct, generated, depth = figures
    assert (res["distinct_states"], res["depth"]) == (distinct, depth)
    if generated is not None:
        assert res["states_generated"] == generated


@pytest.mark.long
def test_pulsar_leak_through_the_portable_path(capsys, tmp_path):
    from test_pulsar_compaction import oracle_actions
    code, res, err = check(capsys, tmp_path, "pulsar_compaction", "--config", "pc_c_CompactedLedgerLeak",
                           "--quiet", settings=PORTABLE)
    assert code == 12, err[-2000:]
    assert [s["action"] for s in res["trace"]] == oracle_actions("pc_c_CompactedLedgerLeak")


@ACCELERATOR
def test_a_process_that_fingerprints_as_json_still_has_the_accelerator(tmp_path):
    """The accelerator's helpers are on the class path of a local JVM whatever the fingerprint: a fresh
    process asked for the accelerated path with JSON fingerprints gets it, with the counter's figures."""
    done = run_engine("--models", TEST_MODELS, *setting_args(path="accelerated", fingerprint="json"), "check",
                      "counter", "--config", "no_deadlock", "--set", "Max=5", "--warehouse", tmp_path / "wh",
                      "--json", "--quiet", timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    res = json.loads(done.stdout)
    want = bfs({1, 2}, 5, deadlock=False)
    assert (res["path"], res["distinct_states"], res["depth"]) == ("accelerated", want["distinct"], want["depth"])


@ACCELERATOR
def test_both_paths_and_each_helper_disabled_give_the_same_run(capsys, tmp_path):
    """The states table of a portable run holds the accelerated run's rows: the same states, each at
    the same depth and position in TLC's order, reached by the same action from the same parent (the
    accelerator fingerprinting as JSON too, as the portable path does), also where every level's new
    states are made whole again from narrow successors (``refetch_from`` 0). And the accelerator with
    one of its JVM helpers disabled at a time: the stage that uses it runs as on the portable path and
    says so on stderr, and the run's figures are the same."""
    args = ("--set", "Clients=c1,c2", "--set", "LedgerLimit=2", "--quiet")
    figures = ("distinct_states", "states_generated", "depth", "actions_generated", "result")
    tables, runs = {}, {}
    # ("refetched": every level's successors narrow, its new states made whole again, expand.Refetch)
    for name, path, more in (("portable", "portable", {}), ("refetched", "portable", {"refetch_from": 0}),
                             ("accelerated", "accelerated", {})):
        code, res, err = check(capsys, tmp_path / name, "ledger_chaining", *args,
                               settings={"path": path, "fingerprint": "json", **more})
        assert code == 0 and res["path"] == path, err[-2000:]
        cols = ["_depth", "_ord", "_fp", "_fp2", "_parent_fp", "_parent_fp2", "_action"]
        runs[name] = {k: res[k] for k in figures}
        tables[name] = sorted(tuple(r.values()) for r in DeltaTable(res["tables"]["states"])
                              .to_pyarrow_table(columns=["md_next_lid", *cols]).to_pylist())
    assert runs["portable"] == runs["refetched"] == runs["accelerated"]
    assert tables["portable"] == tables["refetched"] == tables["accelerated"]
    assert len(tables["portable"]) == runs["portable"]["distinct_states"]
    said = {"RowBytes": "fingerprint: the state's JSON text, as on the portable path (RowBytes disabled",
            "SeenSet": "seen states in the tasks' JVM: off, every successor sent to the driver whole (SeenSet disabled",
            "SortedSeen": "seen index: Spark's anti-join of the rows' fragments (SortedSeen disabled",
            "SwitchRows": "the actions' plan: planned again for each Spark level, as on the portable path "
                          "(SwitchRows disabled",
            "ArrowFrontier": "small levels' frontier: written as JSON text (ArrowFrontier disabled"}
    for helper in HELPERS:
        code, res, err = check(capsys, tmp_path / helper, "ledger_chaining", *args,
                               settings={"disabled_helpers": helper, "level_path": "alternate"})
        assert code == 0, err[-2000:]
        assert f"engine: {said[helper]}" in err, (helper, err[-2000:])
        assert {k: res[k] for k in figures} == runs["accelerated"], helper


@pytest.mark.parametrize("level_path,symmetry", [("driver", True),
                                                  pytest.param("spark", False, marks=pytest.mark.long)])
def test_successors_that_share_a_key_are_fetched_once_each(capsys, tmp_path, level_path, symmetry):
    """The tokens model with ``_choice`` dropped from its actions: a parent's successors by one action
    share their ``_key``. The portable path keeps a level's successors narrow and fetches the new
    ones whole by key (engine.search.expand.Refetch); here that finds more rows than it chose, so it
    fetches them again matched on the fingerprint too. The figures are the independent search's."""
    import shutil
    from test_symmetry import reference
    root = tmp_path / "models"
    shutil.copytree(TEST_MODELS, root)
    for action in ("Inc", "Take", "Release"):
        sql = root / "actions_sql" / "tokens" / f"{action}.sql"
        text = sql.read_text()
        assert ", pi AS _choice" in text
        sql.write_text(text.replace(", pi AS _choice", ""))
    sets = ["--set", "Procs=p1,p2,p3", "--set", "Max=1", "--set", "LogLen=1"]
    code, out, err = check(capsys, tmp_path, "tokens", *sets, *([] if symmetry else ["--no-symmetry"]),
                           settings={**PORTABLE, "level_path": level_path, "refetch_from": 0}, models=root)
    assert code == 0, err[-3000:]
    assert (out["distinct_states"], out["states_generated"], out["depth"], out["actions_generated"]) == \
        reference(["p1", "p2", "p3"], 1, 1, symmetry=symmetry)


def test_a_driver_levels_states_within_the_constraint_are_the_level_itself_where_all_are():
    """A level held on the driver is written with its states within the constraint: where every state
    is (most levels), the table itself, not a copy of every nested column; else those whose
    ``_in_model`` is true (neither false nor null)."""
    import pyarrow as pa
    from engine.search.commit import within_model
    every = pa.table({"x": [[1], [2], [3]], "_in_model": [True, True, True]})
    assert within_model(every) is every
    some = pa.table({"x": [[1], [2], [3], [4]], "_in_model": [True, False, None, True]})
    assert within_model(some).column("x").to_pylist() == [[1], [4]]
    assert within_model(pa.table({"x": [[1]], "_in_model": pa.array([None], pa.bool_())})).num_rows == 0
