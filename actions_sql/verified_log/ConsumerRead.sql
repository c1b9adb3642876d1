-- Consumer.p: Consumer, state Consume, on eReadResponse, with LogNode.p on eReadRequest (request and
-- reply made one step: READ_OK observed by ReadCommitted and the Progress monitor, or
-- READ_NEW_SEGMENT; NO_MORE_ENTRIES, unknown segments and crashed nodes change nothing).
WITH choices AS (
    SELECT f.*, w.n,
        try_element_at(try_element_at(f.st, w.n + 1), f.cseg + 1)  AS sst,
        try_element_at(try_element_at(f.ent, w.n + 1), f.cseg + 1) AS sent
    FROM frontier AS f
    LATERAL VIEW explode(sequence(0, NumNodes - 1)) w AS n
    WHERE f.cpc = 'Consume'
),

answered AS (
    SELECT *,
        CASE
            WHEN sst = 'C' AND coff = size(sent) - 1 THEN 'READ_OK'
            WHEN size(sent) - 1 <= coff THEN IF(sst = 'C', 'READ_NEW_SEGMENT', 'NO_MORE_ENTRIES')
            ELSE 'READ_OK'
        END AS answer
    FROM choices
    WHERE err = '' AND NOT coordDone
      AND vl_has(cnodes, n)
      AND vl_has(up, n)
      AND sst <> 'A'
),

enabled AS (
    SELECT *, IF(answer = 'READ_OK', sent[coff], -1) AS q
    FROM answered
    WHERE answer <> 'NO_MORE_ENTRIES'
),

step AS (
    SELECT * EXCEPT (cseg, coff, cpc, clast, readOK, err, net),
        IF(answer = 'READ_NEW_SEGMENT', cseg + 1, cseg)                   AS cseg,
        IF(answer = 'READ_NEW_SEGMENT', 0, coff + 1)                      AS coff,
        CASE
            WHEN answer = 'READ_NEW_SEGMENT' THEN 'FindSegmentNodes'
            WHEN answer = 'READ_OK' AND q = NumProducers * NumEntries - 2 THEN 'Done'   -- finalSeqNum
            ELSE cpc
        END                                                               AS cpc,
        IF(answer = 'READ_OK' AND q >= clast + 1, q, clast)               AS clast,
        IF(answer = 'READ_OK', readOK | shiftleft(1, q), readOK)          AS readOK,
        -- entries are read in order, except for jumps to a producer's first entry
        IF(answer = 'READ_OK' AND q % NumEntries <> 0 AND q <> clast AND q <> clast + 1, 'A9', err) AS err,
        IF(answer = 'READ_OK' AND q = NumProducers * NumEntries - 2,
           array_append(net, named_struct('t', 'CD', 'p', 0, 'n', 0, 's', 0, 'q', 0, 'num', 0, 'status', '', 'nodes', 0, 'owner', 0)), net) AS net
    FROM enabled
),

final AS (
    SELECT * EXCEPT (net, n, sst, sent, answer, q),
        vl_net(net, pc, pseg, size(logs), takeover.tseg, up) AS net,
        n AS _choice
    FROM step
)

SELECT * FROM final
