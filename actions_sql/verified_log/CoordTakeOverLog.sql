-- Coordinator.p: Coordinator, state Manage, on eTakeOverLog (a persistent request: producer i retries
-- it on every timeout while in TakeOverLog, so it may be processed any number of times).
-- NoSealBeforeTakeover (bug variant): the new producer gets a new segment at once, the current
-- segment is neither suspended nor closed.
WITH choices AS (
    SELECT f.*, w.i, size(f.logs) AS L
    FROM frontier AS f
    LATERAL VIEW explode(sequence(0, NumProducers - 1)) w AS i
),

enabled AS (
    SELECT *,
        CASE
            WHEN L = 0 THEN 'new'                                        -- first segment
            WHEN takeover.tseg >= 0 AND takeover.tseg = L - 1 THEN 'retry'   -- "probably a retry"
            WHEN logs[L - 1].owner = i THEN 'resend'                     -- retry after success
            WHEN NoSealBeforeTakeover THEN 'new'
            ELSE 'suspend'                                               -- start or re-target a takeover
        END AS branch
    FROM choices
    WHERE err = '' AND NOT coordDone
      AND pc[i] = 'TakeOverLog'
),

-- one successor per new segment's node set (AcknowledgeNewSegment; none at the segment bound),
-- or per subset of the old takeover's live nodes still holding a stale eSuspendSegment copy
options AS (
    SELECT *,
        CASE branch
            WHEN 'new' THEN IF(L < MaxSegments, vl_segment_choices(failed, NumNodes, NumReplicas), array())
            WHEN 'suspend' THEN IF(takeover.tseg >= 0, vl_subsets(takeover.tnodes & up, NumNodes), array(0))
            ELSE array(0)
        END AS xs
    FROM enabled
),

witnesses AS (
    SELECT o.*, w.xi, w.x
    FROM options AS o
    LATERAL VIEW posexplode(o.xs) w AS xi, x
),

step AS (
    SELECT * EXCEPT (logs, takeover, net, err),
        IF(branch = 'new' AND x >= 0, array_append(logs, named_struct('nodes', x, 'owner', i)), logs) AS logs,
        IF(branch = 'suspend', named_struct('tseg', L - 1, 'tprod', i, 'tnodes', logs[L - 1].nodes), takeover)
                                                                                         AS takeover,
        CASE branch
            WHEN 'new' THEN IF(x >= 0, array_append(net, named_struct('t', 'NSR', 'p', i, 'n', 0, 's', L, 'q', 0, 'num', 0, 'status', 'OK', 'nodes', x, 'owner', i)), net)
            WHEN 'resend' THEN array_append(net, named_struct('t', 'NSR', 'p', i, 'n', 0, 's', L - 1, 'q', 0, 'num', 0, 'status', 'OK', 'nodes', logs[L - 1].nodes, 'owner', i))
            WHEN 'suspend' THEN concat(net, transform(vl_members(x, NumNodes),
                                n -> named_struct('t', 'SU', 'p', takeover.tprod, 'n', n, 's', takeover.tseg, 'q', 0, 'num', 0, 'status', '', 'nodes', 0, 'owner', 0)))
            ELSE net
        END                                                                              AS net,
        IF(branch = 'new' AND x < 0, 'A8', err)                                          AS err
    FROM witnesses
),

final AS (
    SELECT * EXCEPT (net, i, L, branch, xs, xi, x),
        vl_net(net, pc, pseg, size(logs), takeover.tseg, up) AS net,
        i * 256 + xi AS _choice
    FROM step
)

SELECT * FROM final
