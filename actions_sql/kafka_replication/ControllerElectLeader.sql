-- KafkaReplication.tla: ControllerElectLeader
-- The controller elects any other member of the quorum's ISR, bumping the leader epoch
-- (ControllerUpdateIsr: the next epoch must be at most MaxLeaderEpoch) and sending the request.
WITH choices AS (
    SELECT f.*, c.ni, c.newLeader
    FROM frontier AS f
    LATERAL VIEW posexplode(f.quorumState.isr) c AS ni, newLeader        -- \E newLeader \in quorumState.isr
),

enabled AS (
    SELECT * FROM choices
    WHERE quorumState.leader <> newLeader
      AND nextLeaderEpoch <= MaxLeaderEpoch                              -- LeaderEpochSeq!NextId
),

updated AS (
    SELECT *, named_struct('leader', newLeader, 'leaderEpoch', nextLeaderEpoch, 'isr', quorumState.isr) AS newState
    FROM enabled
),

final AS (
    SELECT
        replicaLog, replicaState, nextRecordId,
        nextLeaderEpoch + 1                                                    AS nextLeaderEpoch,
        array_sort(array_distinct(array_append(leaderAndIsrRequests, newState))) AS leaderAndIsrRequests,
        newState                                                               AS quorumState,
        _parent, ni AS _choice
    FROM updated
)

SELECT * FROM final
