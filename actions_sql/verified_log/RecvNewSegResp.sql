-- Producer.p: Producer, states TakeOverLog and InitNewSegment, on eNewSegmentResponse (with the entry
-- action of Produce: announce eLogEntrySent, send eAppendRequest to every node of the segment).
WITH choices AS (
    SELECT f.*, w.mi, w.m
    FROM frontier AS f
    LATERAL VIEW posexplode(f.net) w AS mi, m
),

enabled AS (
    SELECT *,
        CASE pc[m.p]
            WHEN 'TakeOverLog' THEN IF(m.status = 'OK', 'takeover', 'ignore')     -- newSegment not checked
            WHEN 'InitNewSegment' THEN
                CASE
                    WHEN m.s <> pseg[m.p] + 1 THEN 'ignore'
                    WHEN m.status = 'LOG_IN_TAKEOVER' OR m.owner <> m.p THEN 'halt'  -- another producer took over
                    ELSE 'segment'
                END
            ELSE 'ignore'
        END AS branch
    FROM choices
    WHERE err = '' AND NOT coordDone
      AND m.t = 'NSR'
),

produce AS (
    SELECT *,
        branch IN ('takeover', 'segment') AS starts,
        IF(branch = 'takeover', m.p, current) AS newcurrent                     -- eProducerTakeOver
    FROM enabled
),

step AS (
    SELECT * EXCEPT (pc, pseg, snodes, scount, current, hpc, net),
        transform(pc, (x, j) -> IF(j = m.p,
            CASE WHEN starts THEN 'Produce' WHEN branch = 'halt' THEN 'Halted' ELSE x END, x)) AS pc,
        transform(pseg, (x, j) -> IF(j = m.p AND starts, m.s, x))                        AS pseg,
        transform(snodes, (x, j) -> IF(j = m.p AND starts, m.nodes, x))                  AS snodes,
        transform(scount, (x, j) -> IF(j = m.p AND starts, 0, x))                        AS scount,
        newcurrent                                                                       AS current,
        -- eLogEntrySent: highestPossibleCommit only moves while the producer is the current one
        transform(hpc, (x, j) -> IF(j = m.p AND starts AND newcurrent = m.p, cur[m.p], x)) AS hpc,
        concat(array_remove(net, m),
               IF(starts, transform(vl_members(m.nodes, NumNodes),
                                    n -> named_struct('t', 'AP', 'p', m.p, 'n', n, 's', m.s, 'q', cur[m.p], 'num', 0, 'status', '', 'nodes', 0, 'owner', 0)), array())) AS net
    FROM produce
),

final AS (
    SELECT * EXCEPT (_split, net, mi, m, branch, starts, newcurrent),
        vl_net(net, pc, pseg, size(logs), takeover.tseg, up) AS net,
        mi AS _choice
    FROM step LATERAL VIEW explode(array(0)) AS _split   -- one row: a method of its own (README, Writing a model)
)

SELECT * FROM final
