-- compaction.tla: Terminating
-- A stuttering step once every message is sent and the last compaction is written, so the end of a
-- run is not a deadlock.
WITH final AS (
    SELECT
        messages, compactedLedgers, cursor, compactorState, phaseOneResult, compactionHorizon,
        compactedTopicContext, crashTimes, consumeTimes,
        _parent
    FROM frontier
    WHERE size(messages) = MessageSentLimit
      AND compactorState = 'Compactor_In_PhaseTwoWrite'
      AND coalesce(array_max(transform(compactedLedgers, (l, i) -> IF(l IS NULL, 0, i + 1))), 0) = CompactionTimesLimit
      AND (NOT ModelConsumer OR consumeTimes = ConsumeTimesLimit)
)

SELECT * FROM final
