-- Kip279.tla: BecomeFollowerTruncateKip279
-- Two disjuncts, as in the spec: an empty replica becomes follower truncating to 0; any replica
-- becomes follower truncating to FirstNonMatchingOffsetFromTail(leader, replica) (one past the last
-- offset where both logs hold the same record; 0 if none or if the leader's log is empty). For an
-- empty replica both disjuncts give the same successor, which TLC generates twice.
WITH requests AS (
    SELECT f.*, q.qi, q.req
    FROM frontier AS f
    LATERAL VIEW posexplode(f.leaderAndIsrRequests) q AS qi, req
),

choices AS (
    SELECT rq.*, l.li, l.leader, r.ri, r.replica, d.d
    FROM requests AS rq
    LATERAL VIEW posexplode(Replicas) l AS li, leader        -- \E leader, replica \in Replicas
    LATERAL VIEW posexplode(Replicas) r AS ri, replica
    LATERAL VIEW explode(array(0, 1)) d AS d                   --   \/ disjunct 0 \/ disjunct 1
),

truncation AS (
    SELECT *,
        CASE
            WHEN d = 0 THEN 0
            WHEN replicaLog[li].endOffset = 0 THEN 0                     -- FirstNonMatchingOffsetFromTail
            ELSE coalesce(
                array_max(filter(sequence(0, LogSize - 1), o ->          -- MatchingOffsets(replica, leader)
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
    WHERE (d = 1 OR replicaLog[ri].endOffset = 0)                        -- disjunct 0: ReplicaLog!IsEmpty(replica)
      AND leader <> replica
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
        _parent, ((li * size(Replicas) + ri) * 2 + d) * (MaxLeaderEpoch + 1) + qi AS _choice
    FROM enabled
)

SELECT * FROM final
