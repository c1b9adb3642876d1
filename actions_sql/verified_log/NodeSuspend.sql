-- LogNode.p: LogNode, state WaitForRequest, on eSuspendSegment, for the coordinator's broadcast and
-- its timer-driven retries while the takeover is pending (a persistent request): the segment becomes
-- SUSPENDED (even if it was closed) and the node reports its entry count and last entry.
WITH choices AS (
    SELECT f.*, w.n, f.takeover.tseg AS s, f.takeover.tprod AS p
    FROM frontier AS f
    LATERAL VIEW explode(sequence(0, NumNodes - 1)) w AS n
),

enabled AS (
    SELECT *, ent[n][s] AS sent
    FROM choices
    WHERE err = '' AND NOT coordDone
      AND s >= 0
      AND vl_has(takeover.tnodes, n)
      AND vl_has(up, n)
),

step AS (
    SELECT * EXCEPT (st, net),
        transform(st, (row, j) -> IF(j = n, transform(row, (x, k) -> IF(k = s, 'S', x)), row)) AS st,
        array_append(net, named_struct('t', 'SUR', 'p', p, 'n', 0, 's', s, 'q', IF(size(sent) > 0, sent[size(sent) - 1], 0), 'num', size(sent), 'status', '', 'nodes', 0, 'owner', 0))                                        AS net
    FROM enabled
),

final AS (
    SELECT * EXCEPT (net, n, s, p, sent),
        vl_net(net, pc, pseg, size(logs), takeover.tseg, up) AS net,
        n AS _choice
    FROM step
)

SELECT * FROM final
