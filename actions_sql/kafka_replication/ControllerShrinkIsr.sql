-- KafkaReplication.tla: ControllerShrinkIsr
-- A replica fails (or shuts down): a leader is replaced by NONE and leaves the ISR unless it is the
-- last member; a follower leaves the ISR. Each is a ControllerUpdateIsr (epoch bump, new request).
WITH choices AS (
    SELECT f.*, r.ri, r.replica
    FROM frontier AS f
    LATERAL VIEW posexplode(Replicas) r AS ri, replica       -- \E replica \in Replicas
),

enabled AS (
    SELECT * FROM choices
    WHERE (quorumState.leader = replica OR array_contains(quorumState.isr, replica))
      AND nextLeaderEpoch <= MaxLeaderEpoch                              -- LeaderEpochSeq!NextId
),

updated AS (
    SELECT *, named_struct(
        'leader', IF(quorumState.leader = replica, 'NONE', quorumState.leader),
        'leaderEpoch', nextLeaderEpoch,
        'isr', IF(quorumState.leader = replica AND quorumState.isr = array(replica),
                  quorumState.isr,
                  array_remove(quorumState.isr, replica))) AS newState
    FROM enabled
),

final AS (
    SELECT
        replicaLog, replicaState, nextRecordId,
        nextLeaderEpoch + 1                                                    AS nextLeaderEpoch,
        array_sort(array_distinct(array_append(leaderAndIsrRequests, newState))) AS leaderAndIsrRequests,
        newState                                                               AS quorumState,
        _parent, ri AS _choice
    FROM updated
)

SELECT * FROM final
