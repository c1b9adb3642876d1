"""The seen index as sorted runs (engine/runtime/jvm/SortedSeen.java, engine.search.seen.SeenIndex) against a
set held in Python: which of a level's states it finds, across merges and re-partitions, on the
pairs a sort and a galloping search get wrong first (equal first fingerprints, signed extremes)."""
import random

import pytest
from pyspark.sql.types import LongType, StructField, StructType

import engine.accel.seen_index as seen
from engine.settings import Settings

SCHEMA = StructType([StructField("_fp", LongType(), False), StructField("_fp2", LongType(), False),
                     StructField("_i", LongType(), False)])
LO, HI = -(2 ** 63), 2 ** 63 - 1


def _pairs(rng, n):
    # Many pairs share their first fingerprint, so the second decides; the extremes are included.
    out = {(LO, LO), (LO, HI), (HI, LO), (HI, HI), (0, 0), (-1, 1)}
    while len(out) < n:
        out.add((rng.randint(-3, 3), rng.randint(LO, HI)) if rng.random() < 0.5
                else (rng.randint(LO, HI), rng.randint(-2, 2)))
    return sorted(out)


def _shuffled(seed, n):
    """A random source and ``n`` distinct pairs from it, in random order."""
    rng = random.Random(seed)
    universe = _pairs(rng, n)
    rng.shuffle(universe)
    return rng, universe


def _frame(spark, pairs):
    return spark.createDataFrame([(a, b, i) for i, (a, b) in enumerate(pairs)], SCHEMA)


def _found_new(index, spark, probe):
    out = index.unseen(_frame(spark, probe))
    return sorted(r["_i"] for r in out.select("_i").collect())


def _table(pairs):
    import pyarrow as pa
    return pa.table({"_fp": pa.array([a for a, _ in pairs], pa.int64()),
                     "_fp2": pa.array([b for _, b in pairs], pa.int64()),
                     "_i": pa.array(range(len(pairs)), pa.int64())})


def _jobs(spark):
    return max(spark.sparkContext.statusTracker().getJobIdsForGroup(), default=-1)


def _found_on_the_driver(index, probe, here):
    """The probe's positions ``SeenIndex.unseen_table`` keeps: looked up in this JVM's copy of the
    runs (``here``) or by a job."""
    index.settings = index.settings.replace(here_max=10 ** 6 if here else 0)
    return index.unseen_table(_table(probe))["_i"].to_pylist()


@pytest.mark.parametrize("sorted_runs", [True, False], ids=["sorted_runs", "rows"])
def test_the_index_finds_exactly_the_seen_states(spark, monkeypatch, tmp_path, sorted_runs):
    """Levels of 1 to 400 fingerprints added one by one: the newest fragments merge, and past 60
    fingerprints a run the index is partitioned anew. After each level a probe of seen and unseen
    pairs (some twice) keeps exactly the unseen ones, as the set in Python says, whether it comes as
    rows or (sorted runs) as a level on the driver; the same with the rows' fragments
    (``sorted_seen`` off)."""
    settings = Settings(sorted_seen=sorted_runs, min_partitions=2, run_max=60, max_fragments=3)
    rng, universe = _shuffled(7, 1200)
    index = seen.SeenIndex(spark, 2, tmp_path, settings)
    assert index.sorted == sorted_runs
    held, at = set(), 0
    try:
        for size in (1, 3, 400, 7, 150, 90, 2, 250, 30):
            level = universe[at:at + size]
            at += size
            index.add(_frame(spark, level).select("_fp", "_fp2"))
            held |= set(level)
            probe = rng.sample(universe, 120) + rng.sample(sorted(held), min(5, len(held)))
            want = sorted(i for i, p in enumerate(probe) if p not in held)
            assert _found_new(index, spark, probe) == want
            if sorted_runs:
                for here in (True, False):
                    assert _found_on_the_driver(index, probe, here) == want
        if sorted_runs:
            assert index.partitions >= 16 and sum(index.sizes) == len(held)  # 933 / 60: re-partitioned
            assert len(index.fragments) <= 3 and index.largest_run <= settings.run_max
        assert _found_new(index, spark, []) == []
    finally:
        index.release()
    assert not index.fragments and not index.rdd_ids
    assert list(tmp_path.iterdir()) == []  # (the pairs' files removed)


def test_levels_held_on_the_driver_are_found_until_indexed(spark, tmp_path, monkeypatch):
    """Committed levels' fingerprints handed over by the driver (SeenIndex.hold) stay there until
    ``pending_max`` of them are made a fragment in this JVM (no job reads them back). A level looked up
    on the driver (unseen_table: the runs in this JVM or a job, then the held pairs) or in Spark
    (unseen, which makes the held pairs a fragment first) keeps exactly its unseen states."""
    rng, universe = _shuffled(5, 1500)
    index = seen.SeenIndex(spark, 2, tmp_path, Settings(min_partitions=3, pending_max=300))
    if not index.takes_pairs:
        pytest.skip("the engine's JVM classes are not loaded")
    try:
        assert index.add_pairs([_table(universe[:200]).select(["_fp", "_fp2"])])
        held, at, flushed = set(universe[:200]), 200, []
        for n, size in enumerate((1, 120, 90, 260, 5, 400, 33)):
            level = universe[at:at + size]
            at += size
            index.hold(_table(level).select(["_fp", "_fp2"]))
            flushed.append(index.pending.count == 0)
            held |= set(level)
            assert index.pending.count + sum(index.sizes) == len(held)
            probe = rng.sample(universe, 150) + rng.sample(sorted(held), 5)
            want = sorted(i for i, p in enumerate(probe) if p not in held)
            jobs = _jobs(spark)
            assert _found_on_the_driver(index, probe, here=n % 2 == 0) == want
            assert (_jobs(spark) == jobs) == (n % 2 == 0)  # in this JVM's runs: no job
        # 1, 121, 211, 471 held: made a fragment; 5, 405: again; 33 held.
        assert flushed == [False, False, False, True, False, True, False] and index.pending.count == 33
        assert _found_new(index, spark, probe) == want and index.pending.count == 0
        assert sum(index.sizes) == len(held)
    finally:
        index.release()
    assert list(tmp_path.iterdir()) == []


def test_a_run_is_made_of_sorted_rows_only(spark):
    """The runs are packed from rows Spark sorted; rows out of order are refused, not indexed."""
    import engine.runtime.jvm_ext as jvm_ext
    if not jvm_ext.has_class(spark, "SortedSeen"):
        pytest.skip("the engine's JVM classes are not loaded")
    rows = _frame(spark, [(5, 1), (4, 9)]).coalesce(1)._jdf.queryExecution().toRdd()
    runs = spark._jvm.sse.SortedSeen.pack(rows, 0, 1)
    with pytest.raises(Exception, match="SortedSeen.pack: the rows are not sorted by \\(fp, fp2\\)"):
        spark._jvm.sse.SortedSeen.sizes(runs)


def test_runs_made_from_the_drivers_copy_are_sparks(spark, tmp_path, monkeypatch):
    """The index first made from the driver's copy of the fingerprints (SeenIndex.add_pairs: this JVM
    hashes them into Spark's partitions and each task sorts its run) holds the runs Spark's hash
    partitioning and sort make of the same pairs, partition by partition and in order, and finds
    exactly the unseen states of a probe."""
    import pyarrow as pa
    from engine.accel.held import rows_frame
    rng = random.Random(11)
    pairs = _pairs(rng, 3000)
    rng.shuffle(pairs)
    halves = [pa.table({"_fp": [a for a, _ in part], "_fp2": [b for _, b in part]})
              for part in (pairs[:1000], pairs[1000:])]
    made, packed = seen.SeenIndex(spark, 2, settings=Settings(min_partitions=7)), \
        seen.SeenIndex(spark, 2, settings=Settings(min_partitions=7))
    try:
        assert made.add_pairs(halves, tmp_path)
        packed.add(_frame(spark, pairs).select("_fp", "_fp2"), len(pairs))
        assert made.partitions == packed.partitions == 7 and made.sizes == packed.sizes == [3000]
        schema = SCHEMA[:2]
        by_part = [rows_frame(spark, index._runs.rows(index.fragments[0]), schema).rdd.glom().collect()
                   for index in (made, packed)]
        assert by_part[0] == by_part[1] and all(by_part[0])
        assert all(p == sorted(p) for p in by_part[0])
        probe = rng.sample(pairs, 40) + _pairs(random.Random(12), 60)
        want = sorted(i for i, p in enumerate(probe) if p not in set(pairs))
        assert want and _found_new(made, spark, probe) == want
        assert list(tmp_path.iterdir()) == []  # (its file removed)
    finally:
        made.release()
        packed.release()
