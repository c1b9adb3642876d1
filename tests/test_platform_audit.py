"""``engine audit``: the invariant suite and the table checks over a finished run, and what a
corrupted copy of the table looks like to it."""
import json

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import DeltaTable, write_deltalake

from conftest import TEST_MODELS
from engine.store.deltaio import read_delta
from platform_util import cli, copy_run


@pytest.fixture
def finished(counter_ok):
    return counter_ok


def audit(wh, run):
    code, out, err = cli("--models", TEST_MODELS, "audit", run, "--warehouse", wh, "--json")
    assert out.strip(), err
    return code, json.loads(out)


def checks(report):
    return {name: (ok, detail) for name, ok, detail in report["checks"]}


def test_audit_of_a_finished_run_passes(finished):
    wh, res = finished
    code, out, _ = cli("--models", TEST_MODELS, "audit", res["run_id"], "--warehouse", wh)
    assert code == 0, out
    assert f"audit of run {res['run_id']} (counter): PASS" in out
    assert "[ok] no state twice: 20 rows, 20 distinct fingerprints" in out
    assert "[ok] every state's parent is at the previous depth: 19 non-initial states, all parents found" in out
    assert "[ok] one commit per level with its figures: 6 level commits, depths 1..6" in out
    assert "[ok] invariant Bounded: holds in every state" in out


def test_audit_names_a_duplicated_row(finished, tmp_path):
    wh, res = finished
    run = copy_run(res, tmp_path / "copy")
    states = DeltaTable(str(run / "states")).to_pyarrow_table()
    row = states.filter(pc.equal(states["_depth"], 3)).slice(0, 1)
    write_deltalake(str(run / "states"), row, mode="append")
    code, rep = audit(wh, run)
    assert code == 12 and rep["success"] is False
    c = checks(rep)
    fp, fp2 = row["_fp"][0].as_py(), row["_fp2"][0].as_py()
    assert c["no state twice"] == (False, f"1 fingerprints appear more than once: {fp}/{fp2} (2 rows, depths [3, 3])")
    ok, detail = c["one commit per level with its figures"]
    assert not ok and "commit 7 (WRITE) is not a level commit" in detail
    assert "depth 3: commit 3 says 4 new states, the table holds 5" in detail
    assert c["row count matches the outcome"] == (False, "outcome says 20, table holds 21")
    assert c["every state's parent is at the previous depth"][0] is True


def test_audit_names_a_state_whose_parent_was_dropped(finished, tmp_path):
    wh, res = finished
    run = copy_run(res, tmp_path / "copy")
    dt = DeltaTable(str(run / "states"))
    t = dt.to_pyarrow_table()
    d3 = t.filter(pc.equal(t["_depth"], 3)).to_pylist()
    parent = (d3[0]["_parent_fp"], d3[0]["_parent_fp2"])
    children = sorted((r["_ord"], r["_fp"], r["_fp2"]) for r in d3 if (r["_parent_fp"], r["_parent_fp2"]) == parent)
    dt.delete(f"_fp = {parent[0]} AND _fp2 = {parent[1]}")
    code, rep = audit(wh, run)
    assert code == 12
    ok, detail = checks(rep)["every state's parent is at the previous depth"]
    assert not ok
    assert detail.startswith(f"{len(children)} states without their parent: state {children[0][1]}/{children[0][2]} "
                             f"at depth 3 (parent {parent[0]}/{parent[1]} not at depth 2)")
    assert checks(rep)["no state twice"][0] is True


def test_audit_of_an_unknown_run_is_bad_input(finished):
    wh, _ = finished
    code, out, err = cli("--models", TEST_MODELS, "audit", "no-such-run", "--warehouse", wh)
    assert code == 2 and out == ""
    assert f"error: no run 'no-such-run' under {wh}" in err


def test_a_lost_data_file_fails_the_audit_and_is_not_built_on(finished, tmp_path):
    """A data file the states table's log lists, deleted: the audit fails naming the level and the
    file (exit 12, no traceback), and a check of the same run refuses to build on the table."""
    from platform_util import OK_ARGS
    wh, res = finished
    copy = tmp_path / "wh" / "counter" / res["run_id"]
    copy_run(res, copy)
    lost = sorted((copy / "states" / "depth-000003").rglob("*.parquet"))[0]
    lost.unlink()
    code, rep = audit(tmp_path / "wh", res["run_id"])
    assert code == 12 and rep["success"] is False
    ok, detail = checks(rep)["every data file the log lists is there"]
    assert not ok and detail.startswith(f"1 missing: depth 3: {lost} (the other checks")
    code, out, err = cli("--models", TEST_MODELS, "check", "counter", *OK_ARGS, "--warehouse", tmp_path / "wh")
    assert code == 2 and out == ""
    assert err.strip() == (f"error: run {res['run_id']}: its states table lists {lost} (depth 3), which is missing; "
                           "the run cannot be resumed on it: start it over with --fresh")


def test_reading_one_level_opens_its_files_alone(finished, spark, tmp_path):
    """Each states file's _depth range is in the table's log (the column it keeps statistics for):
    Spark reading one level, as the next frontier is read, skips the other levels' files, here
    deleted: were they opened, the read would fail."""
    wh, res = finished
    copy = copy_run(res, tmp_path / "run")
    adds = pa.table(DeltaTable(str(copy / "states")).get_add_actions(flatten=True))
    ranges = {p: (lo, hi) for p, lo, hi in zip(adds["path"].to_pylist(), adds["min._depth"].to_pylist(),
                                                  adds["max._depth"].to_pylist())}
    assert len(ranges) == 6
    assert all(lo == hi == int(p.split("/")[0].removeprefix("depth-")) for p, (lo, hi) in ranges.items()), ranges
    want = read_delta(spark, res["tables"]["states"], depth=6).count()
    for level in range(1, 6):
        for f in (copy / "states" / f"depth-{level:06d}").rglob("*.parquet"):
            f.unlink()
    got = read_delta(spark, str(copy / "states"), depth=6).count()
    assert got == want > 0
    assert read_delta(spark, str(copy / "states"), depth=7).count() == 0
