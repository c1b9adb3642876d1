-- Helper (no P counterpart): membership in a set of nodes or sequence numbers kept as a bitmask.
CREATE OR REPLACE TEMPORARY FUNCTION vl_has(mask INT, x INT) RETURNS BOOLEAN
RETURN (shiftright(mask, x) & 1) = 1
