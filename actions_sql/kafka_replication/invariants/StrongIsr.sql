-- KafkaReplication.tla: StrongIsr (invariant)
-- Every presumed leader and every member of the quorum's (true) ISR hold the same records below
-- the presumed leader's high watermark: committed data survives any clean election.
forall(sequence(0, size(Replicas) - 1), i ->
    CASE
        WHEN replicaState[i].leader <> Replicas[i] THEN true            -- ~ ReplicaPresumesLeadership(r1)
        WHEN replicaState[i].hw = 0 THEN true
        ELSE forall(quorumState.isr, r2 ->
                 forall(sequence(0, replicaState[i].hw - 1), o ->        -- HasEntry on both, same record
                         o < replicaLog[i].endOffset
                     AND o < replicaLog[array_position(Replicas, r2) - 1].endOffset
                     AND try_element_at(replicaLog[i].records, o + 1)
                         = try_element_at(replicaLog[array_position(Replicas, r2) - 1].records, o + 1)))
    END)
