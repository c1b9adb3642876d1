-- KafkaReplication.tla: BecomeLeader
-- The replica a LeaderAndIsr request names as leader takes it if its epoch is newer than its own;
-- it keeps its high watermark.
WITH choices AS (
    SELECT f.*, q.qi, q.req, array_position(Replicas, q.req.leader) - 1 AS li
    FROM frontier AS f
    LATERAL VIEW posexplode(f.leaderAndIsrRequests) q AS qi, req        -- \E leaderAndIsrRequest \in leaderAndIsrRequests
),

enabled AS (
    SELECT * FROM choices
    WHERE req.leader <> 'NONE'
      AND req.leaderEpoch > replicaState[li].leaderEpoch
),

final AS (
    SELECT
        replicaLog,
        transform(replicaState, (x, i) -> IF(i = li, named_struct(
            'hw', x.hw, 'leaderEpoch', req.leaderEpoch, 'leader', req.leader, 'isr', req.isr), x)) AS replicaState,
        nextRecordId, nextLeaderEpoch, leaderAndIsrRequests, quorumState,
        _parent, qi AS _choice
    FROM enabled
)

SELECT * FROM final
