-- KafkaReplication.tla: LeaderIncHighWatermark
-- Old high-watermark rule: a presumed leader advances its high watermark (an offset of the log)
-- when every member of its ISR follows it and holds that offset; no epoch is checked.
WITH choices AS (
    SELECT f.*, l.li, l.leader
    FROM frontier AS f
    LATERAL VIEW posexplode(Replicas) l AS li, leader        -- \E offset \in Offsets, leader \in Replicas
),

enabled AS (
    SELECT * FROM choices
    WHERE replicaState[li].leader = leader
      AND replicaState[li].hw < LogSize                                  -- offset = hw, offset \in Offsets
      AND forall(replicaState[li].isr, fl ->
              replicaState[array_position(Replicas, fl) - 1].leader = leader
          AND replicaState[li].hw < replicaLog[array_position(Replicas, fl) - 1].endOffset)
),

final AS (
    SELECT
        replicaLog,
        transform(replicaState, (x, i) -> IF(i = li, named_struct(
            'hw', x.hw + 1, 'leaderEpoch', x.leaderEpoch, 'leader', x.leader, 'isr', x.isr), x)) AS replicaState,
        nextRecordId, nextLeaderEpoch, leaderAndIsrRequests, quorumState,
        -- TLC enumerates the offset first, then the leader
        _parent, replicaState[li].hw * size(Replicas) + li AS _choice
    FROM enabled
)

SELECT * FROM final
