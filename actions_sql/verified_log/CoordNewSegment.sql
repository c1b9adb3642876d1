-- Coordinator.p: Coordinator, state Manage, on eNewSegment (a persistent request: producer i retries it
-- on every timeout while in InitNewSegment, with previousSegment = pseg[i] and
-- previousSegmentNumEntries = scount[i]; its lastEntry is always the default, sequence number 0).
WITH choices AS (
    SELECT f.*, w.i, size(f.logs) AS L, f.pseg[w.i] AS prev
    FROM frontier AS f
    LATERAL VIEW explode(sequence(0, NumProducers - 1)) w AS i
),

enabled AS (
    SELECT *,
        CASE
            WHEN takeover.tseg >= 0 THEN 'in_takeover'
            WHEN prev + 1 < L THEN IF(logs[prev + 1].owner = i, 'retry_ok', 'already')   -- NOT_LAST
            ELSE 'close'                                                                -- IS_LAST
        END AS branch
    FROM choices
    WHERE err = '' AND NOT coordDone
      AND pc[i] = 'InitNewSegment'
),

step AS (
    SELECT * EXCEPT (net, unacked),
        CASE branch
            WHEN 'in_takeover' THEN array_append(net,
                named_struct('t', 'NSR', 'p', i, 'n', 0, 's', prev + 1, 'q', 0, 'num', 0, 'status', 'LOG_IN_TAKEOVER', 'nodes', 0, 'owner', takeover.tprod))
            WHEN 'retry_ok' THEN array_append(net,
                named_struct('t', 'NSR', 'p', i, 'n', 0, 's', prev + 1, 'q', 0, 'num', 0, 'status', 'OK', 'nodes', logs[prev + 1].nodes, 'owner', i))
            WHEN 'already' THEN array_append(net,
                named_struct('t', 'NSR', 'p', i, 'n', 0, 's', prev + 1, 'q', 0, 'num', 0, 'status', 'ALREADY_APPENDED', 'nodes', 0, 'owner', logs[prev + 1].owner))
            -- 'close'; variant no_end_retry (MODEL.md 11.3): a one-shot eEndSegment to each node
            ELSE IF(NoEndRetry, concat(net, transform(vl_members(logs[L - 1].nodes, NumNodes),
                n -> named_struct('t', 'ES', 'p', i, 'n', n, 's', prev, 'q', 0, 'num', scount[i], 'status', '', 'nodes', 0, 'owner', 0))),
                net)
        END AS net,
        -- the close is broadcast and retried for ever (unacknowledgedEndSegments, never emptied)
        IF(branch = 'close' AND NOT NoEndRetry,
           concat(unacked, transform(vl_members(logs[L - 1].nodes, NumNodes),
                  n -> named_struct('n', n, 's', prev, 'num', scount[i], 'last', 0, 'np', i))),
           unacked) AS unacked
    FROM enabled
),

final AS (
    SELECT * EXCEPT (net, unacked, i, L, prev, branch),
        vl_net(net, pc, pseg, size(logs), takeover.tseg, up) AS net,
        vl_unacked(unacked) AS unacked,
        i AS _choice
    FROM step
)

SELECT * FROM final
