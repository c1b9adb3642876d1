-- compaction.tla: CompactorPhaseOne
-- Reads every message: readPosition is Len(messages), latestForKey maps each non-null key
-- (GetKeys) to the position of its last message.
WITH enabled AS (
    SELECT * FROM frontier
    WHERE compactorState = 'Compactor_In_PhaseOne'
      AND phaseOneResult IS NULL
      AND size(messages) > 0
),

final AS (
    SELECT
        messages, compactedLedgers, cursor,
        'Compactor_In_PhaseTwoWrite' AS compactorState,
        named_struct(
            'readPosition', size(messages),
            'latestForKey', transform(
                array_sort(array_distinct(filter(transform(messages, m -> m.key), k -> k <> 0))),
                k -> named_struct('key', k,
                                  'pos', aggregate(messages, named_struct('i', 0, 'last', 0),
                                                   (acc, m) -> named_struct('i', acc.i + 1,
                                                                            'last', IF(m.key = k, acc.i + 1, acc.last))).last))
        ) AS phaseOneResult,
        compactionHorizon, compactedTopicContext, crashTimes, consumeTimes,
        _parent
    FROM enabled
)

SELECT * FROM final
