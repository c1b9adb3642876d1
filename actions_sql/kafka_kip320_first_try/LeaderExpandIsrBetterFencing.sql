-- Kip320FirstTry.tla: LeaderExpandIsrBetterFencing
-- The true leader adds a replica caught up to its high watermark with a matching epoch
-- (IsFollowerCaughtUpToLeaderEpoch), once its high watermark has reached its own epoch
-- (HasHighWatermarkReachedCurrentEpoch).
WITH choices AS (
    SELECT f.*, l.li, l.leader, r.ri, r.replica
    FROM frontier AS f
    LATERAL VIEW posexplode(Replicas) l AS li, leader        -- \E leader \in Replicas
    LATERAL VIEW posexplode(Replicas) r AS ri, replica       -- \E replica \in Replicas \ isr
),

enabled AS (
    SELECT *, array_sort(array_append(replicaState[li].isr, replica)) AS newIsr
    FROM choices
    WHERE NOT array_contains(replicaState[li].isr, replica)
      AND replicaState[li].leader = leader                               -- IsFollowerCaughtUpToLeaderEpoch(leader, replica, leaderHw)
      AND replicaState[ri].leader = leader
      AND (replicaState[li].hw = 0
           OR (replicaState[li].hw - 1 < replicaLog[li].endOffset
               AND replicaState[li].hw - 1 < replicaLog[ri].endOffset
               AND try_element_at(replicaLog[ri].records, replicaState[li].hw).epoch
                   = try_element_at(replicaLog[li].records, replicaState[li].hw).epoch))
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
