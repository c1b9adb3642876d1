-- Kip320.tla: FencedBecomeFollowerAndTruncate
-- On a LeaderAndIsr request with a newer epoch naming another replica as leader, the replica
-- becomes follower only once that leader presumes leadership in the request's epoch, truncating to
-- FirstNonMatchingOffsetFromTail(leader, replica) and lowering its high watermark to match.
-- (The leader ranges over Replicas, so the spec's leader = None disjunct never applies.)
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

truncation AS (
    SELECT *,
        CASE
            WHEN replicaLog[li].endOffset = 0 THEN 0                     -- FirstNonMatchingOffsetFromTail
            ELSE coalesce(
                array_max(filter(sequence(0, LogSize - 1), o ->
                    o < replicaLog[ri].endOffset
                    AND o < replicaLog[li].endOffset
                    AND try_element_at(replicaLog[ri].records, o + 1)
                        = try_element_at(replicaLog[li].records, o + 1))) + 1,
                0)
        END AS truncationOffset
    FROM choices
),

enabled AS (
    SELECT * FROM truncation
    WHERE leader <> replica
      AND req.leader = leader
      AND req.leaderEpoch > replicaState[ri].leaderEpoch
      AND replicaState[li].leader = leader                               -- ReplicaPresumesLeadership(leader)
      AND replicaState[li].leaderEpoch = req.leaderEpoch
      AND truncationOffset <= replicaLog[ri].endOffset                   -- ReplicaLog!TruncateTo
),

final AS (
    SELECT
        transform(replicaLog, (x, i) -> IF(i = ri, named_struct(
            'endOffset', truncationOffset,
            'records', transform(x.records, (rec, o) -> IF(o < truncationOffset, rec, NULL))), x)) AS replicaLog,
        transform(replicaState, (x, i) -> IF(i = ri, named_struct(
            'hw', least(truncationOffset, x.hw), 'leaderEpoch', req.leaderEpoch,
            'leader', req.leader, 'isr', req.isr), x)) AS replicaState,
        nextRecordId, nextLeaderEpoch, leaderAndIsrRequests, quorumState,
        _parent, (li * size(Replicas) + ri) * (MaxLeaderEpoch + 1) + qi AS _choice
    FROM enabled
)

SELECT * FROM final
