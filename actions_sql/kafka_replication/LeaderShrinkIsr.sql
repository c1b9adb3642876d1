-- KafkaReplication.tla: LeaderShrinkIsr
-- The true leader drops from the ISR a follower that is not caught up to its end offset
-- (IsFollowerCaughtUp: following it, and holding the offset before the end offset).
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
      AND NOT (                                                          -- IsFollowerCaughtUp(leader, replica, endOffset)
          replicaState[ri].leader = leader
          AND (replicaLog[li].endOffset = 0
               OR (replicaLog[li].endOffset - 1 < replicaLog[li].endOffset
                   AND replicaLog[li].endOffset - 1 < replicaLog[ri].endOffset)))
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
