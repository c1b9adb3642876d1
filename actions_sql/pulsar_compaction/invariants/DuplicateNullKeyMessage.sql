-- compaction.tla: DuplicateNullKeyMessage
-- No null-key message of the compacted ledger in use also lies after the compaction horizon
-- (reproduces Pulsar's duplicated null-key message).
NOT (RetainNullKey AND compactedTopicContext <> 0)
OR forall(IF(compactedTopicContext BETWEEN 1 AND size(compactedLedgers),
             compactedLedgers[compactedTopicContext - 1], NULL),
          c -> c.key <> 0 OR NOT exists(filter(messages, (m, i) -> i + 1 > compactionHorizon), m -> m = c))
