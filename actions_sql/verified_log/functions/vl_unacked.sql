-- Helper (MODEL.md 3.2): unacknowledgedEndSegments as a canonical set (sorted, no duplicates), for
-- the actions that add closes to it. Only Crash removes elements, those of the crashed node at the
-- crash (MODEL.md 6.1); a close added afterwards for a crashed node stays in the set, part of the
-- state though never delivered (NodeEndSegment needs the node up).
CREATE OR REPLACE TEMPORARY FUNCTION vl_unacked(unacked ARRAY<STRUCT<n: INT, s: INT, num: INT, last: INT, np: INT>>)
RETURNS ARRAY<STRUCT<n: INT, s: INT, num: INT, last: INT, np: INT>>
RETURN array_sort(array_distinct(unacked))
