-- KafkaReplication.tla: WeakIsr (invariant)
-- Every presumed leader and every member of its own ISR hold the same records below its high watermark.
forall(sequence(0, size(Replicas) - 1), i ->
    CASE
        WHEN replicaState[i].leader <> Replicas[i] THEN true            -- ~ ReplicaPresumesLeadership(r1)
        WHEN replicaState[i].hw = 0 THEN true
        ELSE forall(replicaState[i].isr, r2 ->
                 forall(sequence(0, replicaState[i].hw - 1), o ->        -- HasEntry on both, same record
                         o < replicaLog[i].endOffset
                     AND o < replicaLog[array_position(Replicas, r2) - 1].endOffset
                     AND try_element_at(replicaLog[i].records, o + 1)
                         = try_element_at(replicaLog[array_position(Replicas, r2) - 1].records, o + 1)))
    END)
