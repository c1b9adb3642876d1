-- KafkaReplication.tla: LeaderWrite
-- A replica that presumes leadership appends a new record (next record id, its leader epoch) at its
-- end offset, if the id sequence and the log have room.
WITH choices AS (
    SELECT f.*, r.ri, r.replica
    FROM frontier AS f
    LATERAL VIEW posexplode(Replicas) r AS ri, replica       -- \E replica \in Replicas
),

enabled AS (
    SELECT * FROM choices
    WHERE replicaState[ri].leader = replica                              -- ReplicaPresumesLeadership
      AND nextRecordId <= MaxRecords - 1                                 -- RecordSeq!NextId
      AND replicaLog[ri].endOffset < LogSize                             -- ReplicaLog!Append: ~IsFull
),

final AS (
    SELECT
        transform(replicaLog, (x, i) -> IF(i = ri, named_struct(
            'endOffset', x.endOffset + 1,
            'records', transform(x.records, (rec, o) -> IF(o = x.endOffset,
                named_struct('id', nextRecordId, 'epoch', replicaState[ri].leaderEpoch), rec))), x)) AS replicaLog,
        replicaState,
        nextRecordId + 1 AS nextRecordId,
        nextLeaderEpoch, leaderAndIsrRequests, quorumState,
        _parent, ri AS _choice
    FROM enabled
)

SELECT * FROM final
