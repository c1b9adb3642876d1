"""A level expanded in slices of its frontier (settings.slice_successors) is the level expanded whole:
the same figures as the independent search, the same stored rows (numbers included), and the same
shortest traces to a deadlock or a violation."""
import glob
import json
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from conftest import TEST_MODELS, setting_args, short_run_env
from engine.errors import WarehouseError
from engine.search.slices import PROGRESS_FILE, SliceProgress, bounds_from_files, files_by_slice
from test_counter import bfs, check


def _stored(wh):
    (path,) = glob.glob(str(wh / "**" / "states"), recursive=True)
    return DeltaTable(path).to_pyarrow_table().sort_by([("_depth", "ascending"), ("_ord", "ascending")])


# The portable path killed within a sliced level in the default suite (the accelerator's is in
# test_a_level_written_in_slices_is_sliced_along_its_files); the accelerator's other stages in slices
# run with SSE_LONG_TESTS=1 (a sliced level costs seconds per slice, whatever its size).
@pytest.mark.parametrize("variant, kill", [
    pytest.param({}, True, marks=pytest.mark.long),
    # Past driver_seen_max the driver forgets the stored fingerprints; repeats within a slice are
    # still blanked (SeenFilter.forget_stored).
    pytest.param({"driver_seen_max": 3}, False, marks=pytest.mark.long),
    pytest.param({"narrow_on_driver": 0, "broadcast_rows": 0}, False, marks=pytest.mark.long),
    # The seen index made in a slice, at its first use, serves the slices after it.
    pytest.param({"index_from": 0, "driver_seen_max": 0}, False, marks=pytest.mark.long),
    ({"path": "portable"}, True),
])
def test_a_sliced_level_is_the_level_expanded_whole(capsys, tmp_path, variant, kill):
    """Sliced, the run stores what it stores expanded whole, and has the independent search's figures.
    With ``kill``, the sliced run is killed once slice 2 of level 4 is written and listed
    (SSE_KILL_AT=after-slice-1:4) and a torn slice's folder is put beside the listed ones (what a
    kill during a slice's write leaves): the next start computes level 4 from its slice 3 on, drops
    the torn folder, and keeps the per-action counts of the slices before the kill."""
    args = ("--config", "no_deadlock", "--set", "Steps=1,3", "--set", "Max=9", "--set", "Cap=6")
    whole = {"level_path": "spark", "slice_successors": 0, **variant}
    sliced = {**whole, "slice_successors": 3}
    want = bfs({1, 3}, 9, cap=6, deadlock=False)
    if kill:
        wh = _whole_and_killed(capsys, tmp_path, args, whole, sliced, "after-slice-1:4")
        (level,) = map(Path, glob.glob(str(wh / "**" / "states" / "depth-000004"), recursive=True))
        progress = json.loads((level / PROGRESS_FILE).read_text())
        assert [r["i"] for r in progress["done"]] == [0, 1] and len(progress["bounds"]) >= 2
        listed = {r["folder"] for r in progress["done"] if r["folder"]}
        torn = level / "slice-0002-torn"
        torn.mkdir()
        shutil.copy(next((level / min(listed)).glob("*.parquet")), torn / "part-00000-torn.parquet")
    else:
        code, res, _ = check(capsys, tmp_path / "whole", *args, settings=whole)
        assert code == 0
        assert (res["distinct_states"], res["states_generated"], res["depth"]) == \
            (want["distinct"], want["generated"], want["depth"])
    code, cut, err = check(capsys, tmp_path / "sliced", *args, settings=sliced)
    assert code == 0, err
    assert (cut["distinct_states"], cut["states_generated"], cut["depth"]) == \
        (want["distinct"], want["generated"], want["depth"])
    assert re.search(r"engine: depth \d+, slice 3 of [3-9]: ", err)  # (levels were sliced)
    assert _stored(tmp_path / "sliced").equals(_stored(tmp_path / "whole"))
    if kill:
        assert "engine: depth 4 resumes at slice 3 of" in err
        assert "depth 4, slice 1 of" not in err and "depth 4, slice 2 of" not in err
        assert not torn.exists() and not (level / PROGRESS_FILE).exists()
        assert _actions(tmp_path / "sliced") == _actions(tmp_path / "whole")


def _actions(tmp_path):
    """Each committed level's per-action generated counts, from the states table's history."""
    (path,) = glob.glob(str(tmp_path / "wh" / "**" / "states"), recursive=True)
    return {int(c["depth"]): json.loads(c["actions_generated"]) for c in DeltaTable(path).history() if "depth" in c}


@pytest.mark.parametrize("path", [pytest.param("accelerated", marks=pytest.mark.long), "portable"])
def test_a_sliced_level_finds_the_shortest_deadlock(capsys, tmp_path, path):
    """The shortest trace to a deadlock, with the levels sliced."""
    sliced = {"path": path, "level_path": "spark", "slice_successors": 4}
    code, res, err = check(capsys, tmp_path / "dead", "--set", "Steps=1,2", "--set", "Max=5", settings=sliced)
    assert code == 11, err
    assert "slice 2 of" in err
    assert len(res["trace"]) == bfs({1, 2}, 5)["trace_length"]


# A run killed and resumed within a sliced level is in the default suite through
# test_a_sliced_level_is_the_level_expanded_whole (portable) and
# test_a_level_written_in_slices_is_sliced_along_its_files (accelerated).
@pytest.mark.long
@pytest.mark.parametrize("path", ["accelerated", "portable"])
def test_a_violation_in_a_sliced_level_killed_after_its_slice_is_found_again(capsys, tmp_path, path):
    """The shortest trace to a violation, with the levels sliced, after a kill once the violation's
    slice is written."""
    sliced = {"path": path, "level_path": "spark", "slice_successors": 4}
    # The violation is in level 4's last slice (slice 3): a run killed once that slice is written
    # computes it again, rather than resuming past it.
    args = ("--no-deadlock", "--set", "Steps=1,2", "--set", "Max=8", "--set", "Limit=5")
    argv = [sys.executable, "-m", "engine", "--models", str(TEST_MODELS), *setting_args(**sliced), "check",
            "counter", "--warehouse", str(tmp_path / "inv" / "wh"), "--json", *args]
    killed = subprocess.run(argv, capture_output=True, text=True, timeout=900,
                            env=short_run_env(SSE_KILL_AT="after-slice-2:4"))
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    code, res, err = check(capsys, tmp_path / "inv", *args, settings=sliced)
    assert code == 12, err
    assert "engine: depth 4 resumes at slice 3 of 3" in err
    assert len(res["trace"]) == bfs({1, 2}, 8, limit=5, deadlock=False)["trace_length"]


def _whole_and_killed(capsys, tmp_path, args, whole, sliced, kill_at):
    """The counter run with ``whole`` settings in tmp_path/whole, and with ``sliced`` ones in
    tmp_path/sliced, killed at ``kill_at`` (SSE_KILL_AT) in a process of its own: its warehouse."""
    code, _, err = check(capsys, tmp_path / "whole", *args, settings=whole)
    assert code == 0, err
    wh = tmp_path / "sliced" / "wh"
    argv = [sys.executable, "-m", "engine", "--models", str(TEST_MODELS), *setting_args(**sliced), "check",
            "counter", "--warehouse", str(wh), "--json", *args]
    killed = subprocess.run(argv, capture_output=True, text=True, timeout=900, env=short_run_env(SSE_KILL_AT=kill_at))
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    return wh


def test_a_level_progress_of_another_level_is_refused(tmp_path):
    """A progress file that is not the level's (another depth, or unreadable) is named, not resumed."""
    from engine.store.runs import RunStore
    from pyspark.sql.types import LongType, StructField, StructType
    store = RunStore(tmp_path, "m", "r", StructType([StructField("x", LongType())]))
    level = store.level_dir(5)
    level.mkdir(parents=True)
    (level / PROGRESS_FILE).write_text(json.dumps({"version": 1, "depth": 3, "bounds": [], "done": []}))
    with pytest.raises(WarehouseError, match=r"depth-000005/_slices.json: the progress of another level"):
        SliceProgress.resume(store, 4)
    (level / PROGRESS_FILE).write_text("{not json")
    with pytest.raises(WarehouseError, match=r"depth-000005/_slices.json: unreadable"):
        SliceProgress.resume(store, 4)


def test_a_level_written_in_slices_is_sliced_along_its_files(capsys, tmp_path):
    """A level whose frontier was itself written in slices is cut along the frontier's files (no split
    copy: ``read=stored`` in the profile), also after a kill within it, and stores what the level
    expanded whole stores."""
    # Levels 4 to 6 sliced (3, 4 and 2 slices): level 6's frontier is level 5, written in 4 slices.
    args = ("--config", "no_deadlock", "--set", "Steps=1,2,3", "--set", "Max=6")
    whole = {"level_path": "spark", "slice_successors": 0}
    sliced = {**whole, "slice_successors": 12, "profile": True}
    _whole_and_killed(capsys, tmp_path, args, whole, sliced, "after-slice-0:6")
    code, res, err = check(capsys, tmp_path / "sliced", *args, settings=sliced)
    assert code == 0, err
    assert "engine: depth 6 resumes at slice 2 of 2" in err
    assert re.search(r"profile depth 6: slices=2 read=stored", err)
    want = bfs({1, 2, 3}, 6, deadlock=False)
    assert (res["distinct_states"], res["states_generated"], res["depth"]) == \
        (want["distinct"], want["generated"], want["depth"])
    assert _stored(tmp_path / "sliced").equals(_stored(tmp_path / "whole"))


def _ord_file(path, ords):
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"x": pa.array(ords, pa.int64()), "_ord": pa.array(ords, pa.int64())}), path)
    return str(path)


def test_slices_follow_the_files_only_where_no_file_meets_two(tmp_path):
    # three blocks of files with disjoint ranges (two files in the first), as a level written in slices
    files = [_ord_file(tmp_path / "a" / "1.parquet", [0, 4, 2]), _ord_file(tmp_path / "a" / "2.parquet", [1, 3, 5]),
             _ord_file(tmp_path / "b" / "1.parquet", [6, 7, 8, 9]), _ord_file(tmp_path / "c" / "1.parquet", [10, 11])]
    assert bounds_from_files(files, 1) == []
    assert bounds_from_files(files, 2) == [6]                 # (at most 1.25 x 6 rows a slice)
    even = [_ord_file(tmp_path / "e" / f"{i}.parquet", list(range(4 * i, 4 * i + 4))) for i in range(3)]
    assert bounds_from_files(even, 2) == [4, 8]                # (one slice more than asked: none past 7.5 rows)
    assert bounds_from_files(files, 3) is None                # (a block of 6 rows is over 1.25 x 4)
    assert bounds_from_files(files, 3, block_over=2.0) == [6, 10]  # (a block of its own up to 2 x 4 rows)
    assert bounds_from_files(files, 5, block_over=2.0) is None     # (6 rows are over 2 x 2.4)
    assert files_by_slice(files, [6, 10]) == [files[:2], [files[2]], [files[3]]]
    assert files_by_slice(files, [3]) is None                 # (both files of the first block meet both slices)
    # a level Spark wrote whole: every file spans it
    whole = [_ord_file(tmp_path / "w" / f"{i}.parquet", list(range(i, 12, 3))) for i in range(3)]
    assert bounds_from_files(whole, 2) is None
