-- compaction.tla: ASSUME (MessageSentLimit \in Nat /\ ... /\ KeySpace \in SUBSET Nat /\ 0 \notin KeySpace ...)
MessageSentLimit >= 0
AND CompactionTimesLimit >= 0
AND ConsumeTimesLimit >= 0
AND forall(KeySpace, k -> k > 0)
AND forall(ValueSpace, v -> v > 0)
AND MaxCrashTimes >= 0
