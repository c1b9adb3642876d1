-- compaction.tla: ModelConsumer /\ Consumer
-- Consumer == UNCHANGED vars: a stuttering step, enabled whenever the consumer is modelled.
WITH final AS (
    SELECT
        messages, compactedLedgers, cursor, compactorState, phaseOneResult, compactionHorizon,
        compactedTopicContext, crashTimes, consumeTimes,
        _parent
    FROM frontier
    WHERE ModelConsumer
)

SELECT * FROM final
