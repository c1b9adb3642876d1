-- Helper (no P counterpart): the elements of a bitmask set over 0..width-1, ascending.
CREATE OR REPLACE TEMPORARY FUNCTION vl_members(mask INT, width INT) RETURNS ARRAY<INT>
RETURN filter(sequence(0, width - 1), x -> (shiftright(mask, x) & 1) = 1)
