-- Kip320FirstTry.tla: ImprovedLeaderIncHighWatermark
-- A presumed leader holding a record at its high watermark advances it when every member of its
-- ISR follows it and holds, one past the high watermark, a record of the leader's epoch there
-- (IsFollowerCaughtUpToLeaderEpoch(leader, follower, hw + 1)).
WITH choices AS (
    SELECT f.*, l.li, l.leader
    FROM frontier AS f
    LATERAL VIEW posexplode(Replicas) l AS li, leader        -- \E leader \in Replicas
),

enabled AS (
    SELECT * FROM choices
    WHERE replicaState[li].leader = leader
      AND replicaState[li].hw < replicaLog[li].endOffset                 -- HasEntry(leader, record, leaderHw)
      AND forall(replicaState[li].isr, fl ->
              replicaState[array_position(Replicas, fl) - 1].leader = leader
          AND replicaState[li].hw < replicaLog[array_position(Replicas, fl) - 1].endOffset
          AND try_element_at(replicaLog[array_position(Replicas, fl) - 1].records, replicaState[li].hw + 1).epoch
              = try_element_at(replicaLog[li].records, replicaState[li].hw + 1).epoch)
),

final AS (
    SELECT
        replicaLog,
        transform(replicaState, (x, i) -> IF(i = li, named_struct(
            'hw', x.hw + 1, 'leaderEpoch', x.leaderEpoch, 'leader', x.leader, 'isr', x.isr), x)) AS replicaState,
        nextRecordId, nextLeaderEpoch, leaderAndIsrRequests, quorumState,
        _parent, li AS _choice
    FROM enabled
)

SELECT * FROM final
