-- Helper (MODEL.md 4.3): unacknowledgedEndSegments as a canonical set; elements of crashed nodes
-- are dropped (a crashed node never processes eEndSegment; the coordinator drops them on a timeout).
CREATE OR REPLACE TEMPORARY FUNCTION vl_unacked(unacked ARRAY<STRUCT<n: INT, s: INT, num: INT, last: INT, np: INT>>, up INT)
RETURNS ARRAY<STRUCT<n: INT, s: INT, num: INT, last: INT, np: INT>>
RETURN array_sort(array_distinct(filter(unacked, u -> (shiftright(up, u.n) & 1) = 1)))
