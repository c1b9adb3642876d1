-- Kip320.tla: FencedLeaderExpandIsr
-- The true leader adds a follower on its epoch that has reached its high watermark
-- (HasFollowerReachedHighWatermark), once its high watermark has reached its own epoch
-- (HasHighWatermarkReachedCurrentEpoch).
WITH choices AS (
    SELECT f.*, l.li, l.leader, r.ri, r.follower
    FROM frontier AS f
    LATERAL VIEW posexplode(Replicas) l AS li, leader        -- \E leader \in Replicas
    LATERAL VIEW posexplode(Replicas) r AS ri, follower      -- \E follower \in Replicas \ isr
),

enabled AS (
    SELECT *, array_sort(array_append(replicaState[li].isr, follower)) AS newIsr
    FROM choices
    WHERE NOT array_contains(replicaState[li].isr, follower)
      AND replicaState[li].leader = leader                               -- IsFollowingLeaderEpoch(leader, follower)
      AND replicaState[ri].leader = leader
      AND replicaState[ri].leaderEpoch = replicaState[li].leaderEpoch
      AND (replicaState[li].hw = 0                                       -- HasFollowerReachedHighWatermark
           OR (replicaState[li].hw > 0 AND replicaState[li].hw - 1 < replicaLog[ri].endOffset))
      AND (replicaState[li].hw = replicaLog[li].endOffset                -- HasHighWatermarkReachedCurrentEpoch(leader)
           OR (replicaState[li].hw < replicaLog[li].endOffset
               AND try_element_at(replicaLog[li].records, replicaState[li].hw + 1).epoch
                   = replicaState[li].leaderEpoch))
      AND quorumState.leader = leader                                    -- QuorumUpdateLeaderAndIsr: IsTrueLeader
      AND replicaState[li].leaderEpoch = quorumState.leaderEpoch
),

final AS (
    SELECT
        replicaLog,
        transform(replicaState, (x, i) -> IF(i = li, named_struct(
            'hw', x.hw, 'leaderEpoch', x.leaderEpoch, 'leader', x.leader, 'isr', newIsr), x)) AS replicaState,
        nextRecordId, nextLeaderEpoch, leaderAndIsrRequests,
        named_struct('leader', quorumState.leader, 'leaderEpoch', quorumState.leaderEpoch, 'isr', newIsr) AS quorumState,
        _parent, li * size(Replicas) + ri AS _choice
    FROM enabled
)

SELECT * FROM final
