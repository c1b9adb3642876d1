-- compaction.tla: CompactorPhaseTwoPersistCusror
-- cursor' = [compactionHorizon |-> compactionHorizon, compactedTopicContext |-> compactedTopicContext]
WITH enabled AS (
    SELECT * FROM frontier
    WHERE compactorState = 'Compactor_In_PhaseTwoPersistCusror'
),

final AS (
    SELECT
        messages, compactedLedgers,
        named_struct('compactionHorizon', compactionHorizon,
                     'compactedTopicContext', compactedTopicContext) AS cursor,
        'Compactor_In_PhaseTwoDeleteLedger' AS compactorState,
        phaseOneResult, compactionHorizon, compactedTopicContext, crashTimes, consumeTimes,
        _parent
    FROM enabled
)

SELECT * FROM final
