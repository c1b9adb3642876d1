-- KafkaTruncateToHighWatermark.tla: BecomeFollowerTruncateToHighWatermark
-- BecomeFollowerAndTruncateTo(leader, replica, replicaHw): on a LeaderAndIsr request with a newer
-- epoch naming another replica as leader, the replica truncates its log to its own high watermark.
-- (The leader ranges over Replicas, so the request's leader is never NONE here.)
WITH requests AS (
    SELECT f.*, q.qi, q.req
    FROM frontier AS f
    LATERAL VIEW posexplode(f.leaderAndIsrRequests) q AS qi, req
),

choices AS (
    SELECT rq.*, l.li, l.leader, r.ri, r.replica
    FROM requests AS rq
    LATERAL VIEW posexplode(Replicas) l AS li, leader        -- \E leader, replica \in Replicas
    LATERAL VIEW posexplode(Replicas) r AS ri, replica       --   then \E leaderAndIsrRequest
),

truncation AS (
    SELECT *, replicaState[ri].hw AS truncationOffset FROM choices
),

enabled AS (
    SELECT * FROM truncation
    WHERE leader <> replica
      AND req.leader = leader
      AND req.leaderEpoch > replicaState[ri].leaderEpoch
      AND truncationOffset <= replicaLog[ri].endOffset                   -- ReplicaLog!TruncateTo
),

final AS (
    SELECT
        transform(replicaLog, (x, i) -> IF(i = ri, named_struct(
            'endOffset', truncationOffset,
            'records', transform(x.records, (rec, o) -> IF(o < truncationOffset, rec, NULL))), x)) AS replicaLog,
        transform(replicaState, (x, i) -> IF(i = ri, named_struct(
            'hw', least(truncationOffset, x.hw), 'leaderEpoch', req.leaderEpoch,
            'leader', leader, 'isr', req.isr), x)) AS replicaState,
        nextRecordId, nextLeaderEpoch, leaderAndIsrRequests, quorumState,
        _parent, (li * size(Replicas) + ri) * (MaxLeaderEpoch + 1) + qi AS _choice
    FROM enabled
)

SELECT * FROM final
