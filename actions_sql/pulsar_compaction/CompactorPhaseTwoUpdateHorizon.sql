-- compaction.tla: CompactorPhaseTwoUpdateHorizon
-- compactionHorizon' = phaseOneResult.readPosition
WITH enabled AS (
    SELECT * FROM frontier
    WHERE compactorState = 'Compactor_In_PhaseTwoUpdateHorizon'
),

final AS (
    SELECT
        messages, compactedLedgers, cursor,
        'Compactor_In_PhaseTwoPersistCusror' AS compactorState,
        phaseOneResult,
        phaseOneResult.readPosition AS compactionHorizon,
        compactedTopicContext, crashTimes, consumeTimes,
        _parent
    FROM enabled
)

SELECT * FROM final
