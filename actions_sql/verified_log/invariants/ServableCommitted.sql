-- ReadCommitted.p, strengthened (MODEL.md 8.2): every entry a live node could serve is committed:
-- all but the last entry of a segment, and the last one too once the segment is closed
forall(sequence(0, NumNodes - 1), n -> (shiftright(up, n) & 1) = 0 OR
    forall(sequence(0, MaxSegments - 1), k ->
        size(filter(ent[n][k], (x, j) -> (j < size(ent[n][k]) - 1 OR st[n][k] = 'C')
                                         AND (shiftright(committed, x) & 1) = 0)) = 0))
