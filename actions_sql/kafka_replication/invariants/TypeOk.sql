-- KafkaReplication.tla: TypeOk (invariant), as the reference runs checked it (the oracle's TypeOkNoMix):
-- written log slots hold records of LogRecords, unwritten ones hold Nil (NULL here), because the
-- spec's [Offsets -> LogRecords \union {Nil}] mixes records and integers, which TLC cannot compare.
    -- LeaderEpochSeq!TypeOk, RecordSeq!TypeOk
    nextLeaderEpoch BETWEEN 0 AND MaxLeaderEpoch + 1
AND nextRecordId BETWEEN 0 AND MaxRecords
    -- ReplicaLog!TypeOk
AND size(replicaLog) = size(Replicas)
AND forall(replicaLog, lg ->
        lg.endOffset BETWEEN 0 AND LogSize
    AND size(lg.records) = LogSize
    AND forall(sequence(0, LogSize - 1), o -> IF(o < lg.endOffset,
            try_element_at(lg.records, o + 1) IS NOT NULL
            AND try_element_at(lg.records, o + 1).id BETWEEN 0 AND MaxRecords - 1
            AND try_element_at(lg.records, o + 1).epoch BETWEEN 0 AND MaxLeaderEpoch,
            try_element_at(lg.records, o + 1) IS NULL)))
    -- replicaState \in [Replicas -> ReplicaState]
AND size(replicaState) = size(Replicas)
AND forall(replicaState, s ->
        s.hw BETWEEN 0 AND LogSize
    AND s.leaderEpoch BETWEEN -1 AND MaxLeaderEpoch
    AND (s.leader = 'NONE' OR array_contains(Replicas, s.leader))
    AND forall(s.isr, r -> array_contains(Replicas, r)))
    -- quorumState \in QuorumState, leaderAndIsrRequests \subseteq QuorumState
AND forall(array_append(leaderAndIsrRequests, quorumState), q ->
        q.leaderEpoch BETWEEN -1 AND MaxLeaderEpoch
    AND (q.leader = 'NONE' OR array_contains(Replicas, q.leader))
    AND forall(q.isr, r -> array_contains(Replicas, r)))
