-- Kip320FirstTry.tla: FollowerTruncate
-- A follower of a presumed leader that needs truncation (its log is longer than the leader's, or
-- its last record's epoch differs from the leader's at that offset) truncates to
-- FirstNonMatchingOffsetFromTail(leader, follower) and lowers its high watermark to match.
WITH choices AS (
    SELECT f.*, l.li, l.leader, fo.fi, fo.follower
    FROM frontier AS f
    LATERAL VIEW posexplode(Replicas) l AS li, leader        -- \E leader, follower \in Replicas
    LATERAL VIEW posexplode(Replicas) fo AS fi, follower
),

truncation AS (
    SELECT *,
        CASE
            WHEN replicaLog[li].endOffset = 0 THEN 0                     -- FirstNonMatchingOffsetFromTail
            ELSE coalesce(
                array_max(filter(sequence(0, LogSize - 1), o ->
                    o < replicaLog[fi].endOffset
                    AND o < replicaLog[li].endOffset
                    AND try_element_at(replicaLog[fi].records, o + 1)
                        = try_element_at(replicaLog[li].records, o + 1))) + 1,
                0)
        END AS truncationOffset
    FROM choices
),

enabled AS (
    SELECT * FROM truncation
    WHERE replicaState[li].leader = leader                               -- ReplicaPresumesLeadership(leader)
      AND replicaState[fi].leader = leader                               -- ReplicaIsFollowing(follower, leader)
      AND (replicaLog[fi].endOffset > replicaLog[li].endOffset           -- FollowerNeedsTruncation(follower, leader)
           OR (replicaLog[fi].endOffset > 0
               AND replicaLog[fi].endOffset - 1 < replicaLog[li].endOffset
               AND try_element_at(replicaLog[li].records, replicaLog[fi].endOffset).epoch
                   <> try_element_at(replicaLog[fi].records, replicaLog[fi].endOffset).epoch))
      AND truncationOffset <= replicaLog[fi].endOffset                   -- ReplicaLog!TruncateTo
),

final AS (
    SELECT
        transform(replicaLog, (x, i) -> IF(i = fi, named_struct(
            'endOffset', truncationOffset,
            'records', transform(x.records, (rec, o) -> IF(o < truncationOffset, rec, NULL))), x)) AS replicaLog,
        transform(replicaState, (x, i) -> IF(i = fi, named_struct(
            'hw', least(truncationOffset, x.hw), 'leaderEpoch', x.leaderEpoch,
            'leader', x.leader, 'isr', x.isr), x)) AS replicaState,
        nextRecordId, nextLeaderEpoch, leaderAndIsrRequests, quorumState,
        _parent, li * size(Replicas) + fi AS _choice
    FROM enabled
)

SELECT * FROM final
