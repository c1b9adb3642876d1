"""A level expanded in slices of its frontier (settings.slice_successors) is the level expanded whole:
the same figures as the independent search, the same stored rows (numbers included), and the same
shortest traces to a deadlock or a violation."""
import glob
import re

import pytest
from deltalake import DeltaTable

from test_counter import bfs, check


def _stored(wh):
    (path,) = glob.glob(str(wh / "**" / "states"), recursive=True)
    return DeltaTable(path).to_pyarrow_table().sort_by([("_depth", "ascending"), ("_ord", "ascending")])


@pytest.mark.parametrize("variant", [
    {},
    # Past driver_seen_max the driver forgets the stored fingerprints; repeats within a slice are
    # still blanked (SeenFilter.forget_stored).
    {"driver_seen_max": 3},
    {"narrow_on_driver": 0, "broadcast_rows": 0},
    # The seen index made in a slice, at its first use, serves the slices after it.
    {"index_from": 0, "driver_seen_max": 0},
    {"path": "portable"},
])
def test_a_sliced_level_is_the_level_expanded_whole(capsys, tmp_path, variant):
    args = ("--config", "no_deadlock", "--set", "Steps=1,3", "--set", "Max=9", "--set", "Cap=6")
    whole = {"level_path": "spark", "slice_successors": 0, **variant}
    sliced = {**whole, "slice_successors": 3}
    code, res, _ = check(capsys, tmp_path / "whole", *args, settings=whole)
    assert code == 0
    code, cut, err = check(capsys, tmp_path / "sliced", *args, settings=sliced)
    assert code == 0, err
    want = bfs({1, 3}, 9, cap=6, deadlock=False)
    for got in (res, cut):
        assert (got["distinct_states"], got["states_generated"], got["depth"]) == \
            (want["distinct"], want["generated"], want["depth"])
    assert re.search(r"engine: depth \d+, slice 3 of [3-9]: ", err)  # (levels were sliced)
    assert _stored(tmp_path / "sliced").equals(_stored(tmp_path / "whole"))


@pytest.mark.parametrize("path", ["accelerated", "portable"])
def test_a_sliced_level_finds_the_shortest_deadlock_and_violation(capsys, tmp_path, path):
    sliced = {"path": path, "level_path": "spark", "slice_successors": 2}
    code, res, err = check(capsys, tmp_path / "dead", "--set", "Steps=1,2", "--set", "Max=5", settings=sliced)
    assert code == 11, err
    assert "slice 2 of" in err
    assert len(res["trace"]) == bfs({1, 2}, 5)["trace_length"]
    code, res, err = check(capsys, tmp_path / "inv", "--no-deadlock", "--set", "Steps=1,2", "--set", "Max=8",
                           "--set", "Limit=5", settings=sliced)
    assert code == 12, err
    assert len(res["trace"]) == bfs({1, 2}, 8, limit=5, deadlock=False)["trace_length"]
