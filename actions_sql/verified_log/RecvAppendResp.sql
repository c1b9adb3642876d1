-- Producer.p: Producer, state Produce, on eAppendResponse (an entry is committed once every node of
-- the segment acknowledged it: announce eLogEntryCommitted, then the next entry or Done; a suspended
-- or closed segment sends the producer to InitNewSegment).
WITH choices AS (
    SELECT f.*, w.mi, w.m
    FROM frontier AS f
    LATERAL VIEW posexplode(f.net) w AS mi, m
),

enabled AS (
    SELECT *,
        CASE
            WHEN pc[m.p] <> 'Produce' OR m.s <> pseg[m.p] THEN 'ignore'
            WHEN m.status = 'SEG_CLOSED' AND m.q = cur[m.p] THEN 'closed'      -- appendAcks not cleared
            WHEN m.status <> 'OK' THEN 'A2'
            WHEN bit_count(acks[m.p] | shiftleft(1, m.n)) < bit_count(snodes[m.p]) THEN 'ack'
            ELSE 'commit'
        END AS branch
    FROM choices
    WHERE err = '' AND NOT coordDone
      AND m.t = 'APR'
),

commits AS (
    SELECT *,
        branch = 'commit' AS c,
        branch = 'commit' AND cur[m.p] + 1 = (m.p + 1) * NumEntries AS finished
    FROM enabled
),

step AS (
    SELECT * EXCEPT (pc, cur, acks, scount, committed, hpc, net, err, prodDone),
        transform(pc, (x, j) -> IF(j = m.p,
            CASE WHEN branch = 'closed' THEN 'InitNewSegment' WHEN finished THEN 'Done' ELSE x END, x)) AS pc,
        transform(cur, (x, j) -> IF(j = m.p AND c, x + 1, x))                                  AS cur,
        transform(acks, (x, j) -> IF(j = m.p AND branch IN ('ack', 'commit'),
                                     IF(c, 0, x | shiftleft(1, m.n)), x))                      AS acks,
        transform(scount, (x, j) -> IF(j = m.p AND c, x + 1, x))                               AS scount,
        IF(c, committed | shiftleft(1, m.q), committed)                                        AS committed,
        -- the next entry's eLogEntrySent (entry action of Produce)
        transform(hpc, (x, j) -> IF(j = m.p AND c AND NOT finished AND current = m.p, cur[m.p] + 1, x)) AS hpc,
        concat(array_remove(net, m),
               IF(c AND NOT finished,
                  transform(vl_members(snodes[m.p], NumNodes),
                            n -> named_struct('t', 'AP', 'p', m.p, 'n', n, 's', pseg[m.p], 'q', cur[m.p] + 1, 'num', 0, 'status', '', 'nodes', 0, 'owner', 0)),
                  array()),
               IF(finished AND m.p = NumProducers - 1,                               -- announceDone
                  array(named_struct('t', 'PD', 'p', 0, 'n', 0, 's', 0, 'q', 0, 'num', 0, 'status', '', 'nodes', 0, 'owner', 0)), array()))              AS net,
        CASE
            WHEN branch = 'A2' THEN 'A2'
            WHEN c AND NOT vl_sap_ok(NaiveSAP, current, m.p, hpc[m.p], m.q) THEN 'SingleActiveProducer'
            ELSE err
        END                                                                                    AS err,
        prodDone
    FROM commits
),

final AS (
    SELECT * EXCEPT (_split, net, mi, m, branch, c, finished),
        vl_net(net, pc, pseg, size(logs), takeover.tseg, up) AS net,
        mi AS _choice
    FROM step LATERAL VIEW explode(array(0)) AS _split   -- one row: a method of its own (README, Writing a model)
)

SELECT * FROM final
