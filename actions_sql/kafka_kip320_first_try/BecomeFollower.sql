-- Kip320FirstTry.tla: BecomeFollower
-- On a LeaderAndIsr request with a newer epoch naming another replica as leader, the replica takes
-- the leader, epoch and ISR, keeps its high watermark and does not truncate.
WITH requests AS (
    SELECT f.*, q.qi, q.req
    FROM frontier AS f
    LATERAL VIEW posexplode(f.leaderAndIsrRequests) q AS qi, req
),

choices AS (
    SELECT rq.*, l.li, l.leader, r.ri, r.replica
    FROM requests AS rq
    LATERAL VIEW posexplode(Replicas) l AS li, leader        -- \E leader, replica \in Replicas,
    LATERAL VIEW posexplode(Replicas) r AS ri, replica       --    leaderAndIsrRequest \in leaderAndIsrRequests
),

enabled AS (
    SELECT * FROM choices
    WHERE leader <> replica
      AND req.leader = leader
      AND req.leaderEpoch > replicaState[ri].leaderEpoch
),

final AS (
    SELECT
        replicaLog,
        transform(replicaState, (x, i) -> IF(i = ri, named_struct(
            'hw', x.hw, 'leaderEpoch', req.leaderEpoch, 'leader', leader, 'isr', req.isr), x)) AS replicaState,
        nextRecordId, nextLeaderEpoch, leaderAndIsrRequests, quorumState,
        _parent, (li * size(Replicas) + ri) * (MaxLeaderEpoch + 1) + qi AS _choice
    FROM enabled
)

SELECT * FROM final
