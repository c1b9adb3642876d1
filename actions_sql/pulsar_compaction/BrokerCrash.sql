-- compaction.tla: BrokerCrash
-- The compactor restarts in phase one and reloads horizon and context from the cursor (0, 0 if Nil).
WITH enabled AS (
    SELECT * FROM frontier
    WHERE crashTimes < MaxCrashTimes
),

final AS (
    SELECT
        messages, compactedLedgers, cursor,
        'Compactor_In_PhaseOne' AS compactorState,
        CAST(NULL AS STRUCT<readPosition:INT, latestForKey:ARRAY<STRUCT<key:INT, pos:INT>>>) AS phaseOneResult,
        coalesce(cursor.compactionHorizon, 0) AS compactionHorizon,
        coalesce(cursor.compactedTopicContext, 0) AS compactedTopicContext,
        crashTimes + 1 AS crashTimes,
        consumeTimes,
        _parent
    FROM enabled
)

SELECT * FROM final
