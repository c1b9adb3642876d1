-- KafkaReplication.tla: Init
-- Empty logs (every slot Nil, written NULL here), no leader anywhere, the whole replica set in the
-- quorum's ISR, no LeaderAndIsr request sent; both id sequences start at 0.
WITH final AS (
    SELECT
        transform(Replicas, r -> named_struct(
            'endOffset', 0,
            'records', array_repeat(CAST(NULL AS STRUCT<id: INT, epoch: INT>), LogSize))) AS replicaLog,
        transform(Replicas, r -> named_struct(
            'hw', 0, 'leaderEpoch', -1, 'leader', 'NONE', 'isr', CAST(array() AS ARRAY<STRING>))) AS replicaState,
        0                                                                   AS nextRecordId,
        0                                                                   AS nextLeaderEpoch,
        array()                                                             AS leaderAndIsrRequests,
        named_struct('leader', 'NONE', 'leaderEpoch', -1, 'isr', Replicas) AS quorumState
)
SELECT * FROM final
