-- compaction.tla: CompactorPhaseTwoUpdateContext
-- compactedTopicContext' = MaxCompactedLedgerId(compactedLedgers)
WITH enabled AS (
    SELECT * FROM frontier
    WHERE compactorState = 'Compactor_In_PhaseTwoUpdateContext'
),

final AS (
    SELECT
        messages, compactedLedgers, cursor,
        'Compactor_In_PhaseTwoUpdateHorizon' AS compactorState,
        phaseOneResult, compactionHorizon,
        coalesce(array_max(transform(compactedLedgers, (l, i) -> IF(l IS NULL, 0, i + 1))), 0)
            AS compactedTopicContext,
        crashTimes, consumeTimes,
        _parent
    FROM enabled
)

SELECT * FROM final
