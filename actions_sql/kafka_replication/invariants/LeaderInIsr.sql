-- KafkaReplication.tla: LeaderInIsr (invariant)
-- The quorum's leader is in the quorum's ISR. The initial state violates it as the spec stands:
-- its leader is NONE, which is never in the ISR (and ControllerShrinkIsr sets NONE again).
array_contains(quorumState.isr, quorumState.leader)
