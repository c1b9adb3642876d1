-- LogNode.p: LogNode, state WaitForRequest, on eEndSegment, for every element of the coordinator's
-- unacknowledgedEndSegments (re-sent on each coordinator timeout, for ever): the segment is closed,
-- an uncommitted tail is truncated, a missing last entry is re-replicated; the node confirms.
WITH choices AS (
    SELECT f.*, w.ui, w.u, f.ent[w.u.n][w.u.s] AS sent
    FROM frontier AS f
    LATERAL VIEW posexplode(f.unacked) w AS ui, u
),

enabled AS (
    SELECT *, filter(sent, (x, k) -> k < u.num) AS cut
    FROM choices
    WHERE err = '' AND NOT coordDone
      AND vl_has(up, u.n)
),

fixed AS (
    SELECT *, IF(size(cut) = u.num - 1, array_append(cut, u.last), cut) AS newent
    FROM enabled
),

step AS (
    SELECT * EXCEPT (st, ent, net, err),
        transform(st, (row, j) -> IF(j = u.n, transform(row, (x, k) -> IF(k = u.s, 'C', x)), row))    AS st,
        transform(ent, (row, j) -> IF(j = u.n, transform(row, (x, k) -> IF(k = u.s, newent, x)), row)) AS ent,
        array_append(net, named_struct('t', 'ESR', 'p', u.np, 'n', u.n, 's', u.s, 'q', u.last, 'num', 0, 'status', '', 'nodes', 0, 'owner', 0))                         AS net,
        IF(size(newent) <> u.num, 'A5', err)                                                         AS err
    FROM fixed
),

final AS (
    SELECT * EXCEPT (net, ui, u, sent, cut, newent),
        vl_net(net, pc, pseg, size(logs), takeover.tseg, up) AS net,
        ui AS _choice
    FROM step
)

SELECT * FROM final
