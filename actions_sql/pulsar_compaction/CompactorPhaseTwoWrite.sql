-- compaction.tla: CompactorPhaseTwoWrite
-- Writes CompactMessages(messages, phaseOneResult) to ledger MaxCompactedLedgerId + 1, if that id is
-- within 1..CompactionTimesLimit. CompactMessages keeps, among the first readPosition messages,
-- null-key messages if RetainNullKey and each keyed message that is its key's latest.
WITH enabled AS (
    SELECT *,
        coalesce(array_max(transform(compactedLedgers, (l, i) -> IF(l IS NULL, 0, i + 1))), 0) + 1 AS new_id
    FROM frontier
    WHERE phaseOneResult IS NOT NULL
      AND compactorState = 'Compactor_In_PhaseTwoWrite'
),

compacted AS (
    SELECT *,
        transform(
            filter(sequence(1, phaseOneResult.readPosition), i ->
                IF(messages[i - 1].key = 0,
                   RetainNullKey,
                   i = aggregate(phaseOneResult.latestForKey, 0,
                                 (acc, e) -> IF(e.key = messages[i - 1].key, e.pos, acc)))),
            i -> messages[i - 1]) AS compacted_messages
    FROM enabled
    WHERE new_id BETWEEN 1 AND CompactionTimesLimit
),

final AS (
    SELECT
        messages,
        transform(compactedLedgers, (l, i) -> IF(i + 1 = new_id, compacted_messages, l)) AS compactedLedgers,
        cursor,
        'Compactor_In_PhaseTwoUpdateContext' AS compactorState,
        phaseOneResult, compactionHorizon, compactedTopicContext, crashTimes, consumeTimes,
        _parent
    FROM compacted
)

SELECT * FROM final
