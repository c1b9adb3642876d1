-- LogNode.p: LogNode, state WaitForRequest, on eAppendRequest (append to an open segment and
-- announce eLogEntryStored; a suspended or closed segment answers APPEND_SEG_CLOSED).
WITH choices AS (
    SELECT f.*, w.mi, w.m, try_element_at(try_element_at(f.st, w.m.n + 1), w.m.s + 1) AS sst,
           try_element_at(try_element_at(f.ent, w.m.n + 1), w.m.s + 1) AS sent
    FROM frontier AS f
    LATERAL VIEW posexplode(f.net) w AS mi, m
),

enabled AS (
    SELECT *,
        CASE
            WHEN sst IN ('C', 'S') THEN 'closed'
            WHEN size(sent) > 0 AND m.q <= sent[size(sent) - 1] THEN 'A4'   -- sequence numbers increase
            ELSE 'append'
        END AS branch
    FROM choices
    WHERE err = '' AND NOT coordDone
      AND m.t = 'AP'
      AND vl_has(up, m.n)
),

step AS (
    SELECT * EXCEPT (st, ent, stored, net, err),
        IF(branch = 'closed', st,
           transform(st, (row, j) -> IF(j = m.n, transform(row, (x, k) -> IF(k = m.s, 'O', x)), row))) AS st,
        IF(branch = 'append',
           transform(ent, (row, j) -> IF(j = m.n, transform(row, (x, k) -> IF(k = m.s, array_append(x, m.q), x)), row)),
           ent)                                                                                      AS ent,
        IF(branch = 'append',
           transform(stored, (x, j) -> IF(j = m.q, x | shiftleft(1, m.n), x)), stored)               AS stored,
        array_append(array_remove(net, m),
            named_struct('t', 'APR', 'p', m.p, 'n', m.n, 's', m.s, 'q', m.q, 'num', 0, 'status', IF(branch = 'closed', 'SEG_CLOSED', 'OK'), 'nodes', 0, 'owner', 0))   AS net,
        IF(branch = 'A4', 'A4', err)                                                                 AS err
    FROM enabled
),

final AS (
    SELECT * EXCEPT (_split, net, mi, m, sst, sent, branch),
        vl_net(net, pc, pseg, size(logs), takeover.tseg, up) AS net,
        mi AS _choice
    FROM step LATERAL VIEW explode(array(0)) AS _split   -- one row: a method of its own (README, Writing a model)
)

SELECT * FROM final
