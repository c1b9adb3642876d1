-- LogNode.p: LogNode, state WaitForRequest, on eSuspendSegment, for a stale copy still in flight after
-- its takeover completed or was re-targeted (same handler as NodeSuspend, message consumed).
WITH choices AS (
    SELECT f.*, w.mi, w.m, try_element_at(try_element_at(f.ent, w.m.n + 1), w.m.s + 1) AS sent
    FROM frontier AS f
    LATERAL VIEW posexplode(f.net) w AS mi, m
),

enabled AS (
    SELECT * FROM choices
    WHERE err = '' AND NOT coordDone
      AND m.t = 'SU'
      AND vl_has(up, m.n)
),

step AS (
    SELECT * EXCEPT (st, net),
        transform(st, (row, j) -> IF(j = m.n, transform(row, (x, k) -> IF(k = m.s, 'S', x)), row)) AS st,
        array_append(array_remove(net, m),
                     named_struct('t', 'SUR', 'p', m.p, 'n', 0, 's', m.s, 'q', IF(size(sent) > 0, sent[size(sent) - 1], 0), 'num', size(sent), 'status', '', 'nodes', 0, 'owner', 0))                                               AS net
    FROM enabled
),

final AS (
    SELECT * EXCEPT (net, mi, m, sent),
        vl_net(net, pc, pseg, size(logs), takeover.tseg, up) AS net,
        mi AS _choice
    FROM step
)

SELECT * FROM final
