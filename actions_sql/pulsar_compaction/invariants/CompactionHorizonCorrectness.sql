-- compaction.tla: CompactionHorizonCorrectness
-- Every message before the horizon has its key in the compacted ledger compactedLedgers[compactedTopicContext]
-- at the same or a later id (a null-key message only if RetainNullKey). TLC reads that ledger lazily, so
-- with compactionHorizon = 0 it is never read; a context outside the ledgers or naming a Nil ledger
-- yields NULL here, which the engine counts as a violation (TLC would stop with an evaluation error).
compactionHorizon = 0
OR forall(slice(messages, 1, compactionHorizon), m ->
       (m.key = 0 AND NOT RetainNullKey)
       OR exists(IF(compactedTopicContext BETWEEN 1 AND size(compactedLedgers),
                    compactedLedgers[compactedTopicContext - 1], NULL),
                 c -> c.key = m.key AND c.id >= m.id))
