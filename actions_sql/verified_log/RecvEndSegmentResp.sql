-- Coordinator.p: Coordinator, state Manage, on eEndSegmentResponse (a node confirmed the close; if the
-- segment is the last one, AcknowledgeNewSegment for the new producer). The reply lacks numEntries,
-- so "unacknowledgedEndSegments -= (req)" never matches and the closes are retried for ever.
WITH choices AS (
    SELECT f.*, w.mi, w.m, size(f.logs) AS L
    FROM frontier AS f
    LATERAL VIEW posexplode(f.net) w AS mi, m
),

enabled AS (
    SELECT *, (m.s = L - 1) AS process
    FROM choices
    WHERE err = '' AND NOT coordDone
      AND m.t = 'ESR'
),

options AS (
    SELECT *,
        IF(process, IF(L < MaxSegments, vl_segment_choices(failed, NumNodes, NumReplicas), array()),
           array(0)) AS sns
    FROM enabled
),

witnesses AS (
    SELECT o.*, a.ci, a.sn
    FROM options AS o
    LATERAL VIEW posexplode(o.sns) a AS ci, sn
),

step AS (
    SELECT * EXCEPT (err, logs, net),
        IF(process AND sn < 0, 'A8', err) AS err,
        IF(process AND sn >= 0, array_append(logs, named_struct('nodes', sn, 'owner', m.p)), logs) AS logs,
        concat(array_remove(net, m),
               IF(process AND sn >= 0, array(named_struct('t', 'NSR', 'p', m.p, 'n', 0, 's', L, 'q', 0, 'num', 0, 'status', 'OK', 'nodes', sn, 'owner', m.p)), array())) AS net
    FROM witnesses
),

final AS (
    SELECT * EXCEPT (net, mi, m, L, process, sns, ci, sn),
        vl_net(net, pc, pseg, size(logs), takeover.tseg, up) AS net,
        mi AS _choice   -- witnesses of one message tie; the fingerprint orders them
    FROM step
)

SELECT * FROM final
