-- Kip320.tla: FencedLeaderIncHighWatermark
-- A replica holding a record at its high watermark advances it when every member of its ISR
-- follows it on its epoch and holds that offset. (As written, an empty ISR needs no leadership.)
WITH choices AS (
    SELECT f.*, l.li, l.leader
    FROM frontier AS f
    LATERAL VIEW posexplode(Replicas) l AS li, leader        -- \E leader \in Replicas
),

enabled AS (
    SELECT * FROM choices
    WHERE replicaState[li].hw < replicaLog[li].endOffset                 -- ReplicaLog!HasOffset(leader, leaderHw)
      AND forall(replicaState[li].isr, fl ->
              replicaState[li].leader = leader                           -- IsFollowingLeaderEpoch(leader, follower)
          AND replicaState[array_position(Replicas, fl) - 1].leader = leader
          AND replicaState[array_position(Replicas, fl) - 1].leaderEpoch = replicaState[li].leaderEpoch
          AND replicaState[li].hw < replicaLog[array_position(Replicas, fl) - 1].endOffset)
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
