-- Kip320FirstTry.tla: LeaderShrinkIsrBetterFencing
-- The true leader drops from its ISR a follower not caught up to its end offset with a matching
-- epoch (~ IsFollowerCaughtUpToLeaderEpoch).
WITH choices AS (
    SELECT f.*, l.li, l.leader, r.ri, r.replica
    FROM frontier AS f
    LATERAL VIEW posexplode(Replicas) l AS li, leader        -- \E leader \in Replicas
    LATERAL VIEW posexplode(Replicas) r AS ri, replica       -- \E replica \in isr \ {leader}
),

enabled AS (
    SELECT *, array_remove(replicaState[li].isr, replica) AS newIsr
    FROM choices
    WHERE array_contains(replicaState[li].isr, replica) AND replica <> leader
      AND NOT (                                                          -- IsFollowerCaughtUpToLeaderEpoch(leader, replica, endOffset)
          replicaState[li].leader = leader
          AND replicaState[ri].leader = leader
          AND (replicaLog[li].endOffset = 0
               OR (replicaLog[li].endOffset - 1 < replicaLog[ri].endOffset
                   AND try_element_at(replicaLog[ri].records, replicaLog[li].endOffset).epoch
                       = try_element_at(replicaLog[li].records, replicaLog[li].endOffset).epoch)))
      AND quorumState.leader = leader                                    -- QuorumUpdateLeaderAndIsr: IsTrueLeader
      AND replicaState[li].leader = leader
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
