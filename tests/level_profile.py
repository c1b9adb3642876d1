"""New states per breadth-first level of a finished run, and a comparison that says where two
profiles part: the first level that differs is where to look for the missing or extra states (diff
that level's states, e.g. with tests/vl_reference.py's from_engine_row), the totals are not."""
from deltalake import DeltaTable


def level_profile(res):
    """New states per level of a run (its ``--json`` result), from the initial states' level (depth 1)."""
    rows = DeltaTable(res["tables"]["levels"]).to_pyarrow_table().to_pylist()
    return [r["new_states"] for r in sorted(rows, key=lambda r: r["depth"])]


def profile_mismatch(got, expected):
    """None if the two profiles are equal, else a message naming the first depth (1 = the initial
    states) where they part, the counts there, and both profiles in full."""
    got, expected = list(got), list(expected)
    if got == expected:
        return None
    i = next((k for k, (a, b) in enumerate(zip(got, expected)) if a != b), min(len(got), len(expected)))

    def at(p):
        return f"{p[i]:,}" if i < len(p) else "no level"

    return (f"level profiles part at depth {i + 1}: run {at(got)}, expected {at(expected)} new states "
            f"(equal before: {sum(got[:i]):,} states in {i} levels)\n"
            f"  run      ({len(got)} levels, {sum(got):,} states): {got}\n"
            f"  expected ({len(expected)} levels, {sum(expected):,} states): {expected}")


def assert_level_profile(res, expected):
    """The run's new states per level are ``expected``, level by level."""
    why = profile_mismatch(level_profile(res), expected)
    assert why is None, why
