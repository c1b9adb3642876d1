-- Helper (no P counterpart): every subset of a bitmask set (the empty set first), for the
-- nondeterministic choice of which stale eSuspendSegment copies are still in flight.
CREATE OR REPLACE TEMPORARY FUNCTION vl_subsets(mask INT, width INT) RETURNS ARRAY<INT>
RETURN filter(sequence(0, shiftleft(1, width) - 1), x -> (x & ~mask) = 0)
