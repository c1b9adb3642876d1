-- LogNode.p: LogNode, state WaitForRequest, on eEndSegment, variant no_end_retry (MODEL.md 11.3, 6.4
-- RecvEndSegment): the coordinator of 02 sent each close once, a one-shot message ES(n, s, num, last, np)
-- that may be lost; its delivery is NodeEndSegment's: the segment is closed, an uncommitted tail is
-- truncated, a missing last entry is re-replicated, and the node confirms.
WITH choices AS (
    SELECT f.*, w.mi, w.m, f.ent[w.m.n][w.m.s] AS sent
    FROM frontier AS f
    LATERAL VIEW posexplode(f.net) w AS mi, m
),

enabled AS (
    SELECT *, filter(sent, (x, k) -> k < m.num) AS cut
    FROM choices
    WHERE err = '' AND NOT coordDone
      AND m.t = 'ES'
      AND vl_has(up, m.n)
),

fixed AS (
    SELECT *, IF(size(cut) = m.num - 1, array_append(cut, m.q), cut) AS newent
    FROM enabled
),

step AS (
    SELECT * EXCEPT (st, ent, net, err),
        transform(st, (row, j) -> IF(j = m.n, transform(row, (x, k) -> IF(k = m.s, 'C', x)), row))    AS st,
        transform(ent, (row, j) -> IF(j = m.n, transform(row, (x, k) -> IF(k = m.s, newent, x)), row)) AS ent,
        array_append(array_remove(net, m),
                     named_struct('t', 'ESR', 'p', m.p, 'n', m.n, 's', m.s, 'q', m.q, 'num', 0, 'status', '', 'nodes', 0, 'owner', 0)) AS net,
        IF(size(newent) <> m.num, 'A5', err)                                                         AS err
    FROM fixed
),

final AS (
    SELECT * EXCEPT (net, mi, m, sent, cut, newent),
        vl_net(net, pc, pseg, size(logs), takeover.tseg, up) AS net,
        mi AS _choice
    FROM step
)

SELECT * FROM final
