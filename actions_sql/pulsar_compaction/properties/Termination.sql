-- compaction.tla: Termination (liveness, <>): eventually every message is sent, the compactor is in
-- phase two's write and the last compacted ledger is CompactionTimesLimit (and, with the consumer
-- modelled, it consumed ConsumeTimesLimit times): the guard of Terminating.
-- form: <>
size(messages) = MessageSentLimit
AND compactorState = 'Compactor_In_PhaseTwoWrite'
AND coalesce(array_max(transform(compactedLedgers, (l, i) -> IF(l IS NULL, 0, i + 1))), 0) = CompactionTimesLimit
AND (NOT ModelConsumer OR consumeTimes = ConsumeTimesLimit)
