-- Coordinator.p: Coordinator, state Manage, on eSuspendSegmentResponse (the first node to answer
-- fixes the commit point: its last entry is declared durable and committed on behalf of the new
-- producer, the segment is closed with its count, a new segment goes to the new producer).
WITH choices AS (
    SELECT f.*, w.mi, w.m, size(f.logs) AS L
    FROM frontier AS f
    LATERAL VIEW posexplode(f.net) w AS mi, m
),

enabled AS (
    SELECT *,
        -- IsLastSegment(s) = IS_LAST and a takeover is pending; segment and producer are not compared
        (m.s = L - 1 AND takeover.tseg >= 0) AS process,
        (m.s = L - 1 AND takeover.tseg >= 0 AND m.num > 0) AS announce
    FROM choices
    WHERE err = '' AND NOT coordDone
      AND m.t = 'SUR'
),

-- one successor per new segment's node set (none at the segment bound) and per subset of the
-- takeover's live nodes still holding a stale eSuspendSegment copy
options AS (
    SELECT *,
        IF(process, IF(L < MaxSegments, vl_segment_choices(failed, NumNodes, NumReplicas), array()),
           array(0)) AS sns,
        IF(process, vl_subsets(takeover.tnodes & up, NumNodes), array(0)) AS sus
    FROM enabled
),

witnesses AS (
    SELECT o.*, a.ci, a.sn, b.ui, b.su
    FROM options AS o
    LATERAL VIEW posexplode(o.sns) a AS ci, sn
    LATERAL VIEW posexplode(o.sus) b AS ui, su
),

step AS (
    SELECT * EXCEPT (durable, current, committed, err, unacked, takeover, logs, net),
        IF(announce, durable | shiftleft(1, m.q), durable)       AS durable,     -- eDurableInCoordinator
        IF(announce, m.p, current)                               AS current,     -- eProducerTakeOver
        IF(announce, committed | shiftleft(1, m.q), committed)   AS committed,   -- eLogEntryCommitted
        CASE
            WHEN announce AND NOT vl_sap_ok(NaiveSAP, m.p, m.p, hpc[m.p], m.q) THEN 'SingleActiveProducer'
            WHEN process AND sn < 0 THEN 'A8'
            ELSE err
        END                                                      AS err,
        IF(process AND NOT NoEndRetry,
           concat(unacked, transform(vl_members(logs[L - 1].nodes, NumNodes),
                  n -> named_struct('n', n, 's', m.s, 'num', m.num, 'last', m.q, 'np', m.p))),
           unacked)                                              AS unacked,
        IF(process, named_struct('tseg', -1, 'tprod', -1, 'tnodes', 0), takeover) AS takeover,
        IF(process AND sn >= 0, array_append(logs, named_struct('nodes', sn, 'owner', m.p)), logs) AS logs,
        concat(
            array_remove(net, m),
            IF(process AND sn >= 0, array(named_struct('t', 'NSR', 'p', m.p, 'n', 0, 's', L, 'q', 0, 'num', 0, 'status', 'OK', 'nodes', sn, 'owner', m.p)), array()),
            transform(vl_members(su, NumNodes),
                      n -> named_struct('t', 'SU', 'p', takeover.tprod, 'n', n, 's', takeover.tseg, 'q', 0, 'num', 0, 'status', '', 'nodes', 0, 'owner', 0)),
            -- variant no_end_retry (MODEL.md 11.3): the close is a one-shot eEndSegment to each node
            IF(process AND NoEndRetry,
               transform(vl_members(logs[L - 1].nodes, NumNodes),
                         n -> named_struct('t', 'ES', 'p', m.p, 'n', n, 's', m.s, 'q', m.q, 'num', m.num, 'status', '', 'nodes', 0, 'owner', 0)),
               array())
        )                                                        AS net
    FROM witnesses
),

final AS (
    SELECT * EXCEPT (net, unacked, mi, m, L, process, announce, sns, sus, ci, sn, ui, su),
        vl_net(net, pc, pseg, size(logs), takeover.tseg, up) AS net,
        vl_unacked(unacked) AS unacked,
        mi AS _choice   -- witnesses of one message tie; the fingerprint orders them
    FROM step
)

SELECT * FROM final
