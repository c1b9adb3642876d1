-- compaction.tla: CompactorPhaseTwoDeleteLedger
-- Deletes (sets to Nil) the second-to-last compacted ledger, MaxCompactedLedgerId - 1, when there is
-- one; with MaxCompactedLedgerId = 1 the old id is Nil and nothing changes.
WITH enabled AS (
    SELECT *,
        coalesce(array_max(transform(compactedLedgers, (l, i) -> IF(l IS NULL, 0, i + 1))), 0) - 1 AS old_id
    FROM frontier
    WHERE compactorState = 'Compactor_In_PhaseTwoDeleteLedger'
),

final AS (
    SELECT
        messages,
        transform(compactedLedgers, (l, i) -> IF(i + 1 = old_id, NULL, l)) AS compactedLedgers,
        cursor,
        'Compactor_In_PhaseOne' AS compactorState,
        CAST(NULL AS STRUCT<readPosition:INT, latestForKey:ARRAY<STRUCT<key:INT, pos:INT>>>) AS phaseOneResult,
        compactionHorizon, compactedTopicContext, crashTimes, consumeTimes,
        _parent
    FROM enabled
)

SELECT * FROM final
