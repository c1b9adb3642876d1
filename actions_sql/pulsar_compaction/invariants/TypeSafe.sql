-- compaction.tla: TypeSafe
-- MessageSpace == [id: 1..MessageSentLimit, key: KeySet, value: ValueSet]
forall(messages, m -> m.id BETWEEN 1 AND MessageSentLimit
                      AND array_contains(array_union(array(0), KeySpace), m.key)
                      AND array_contains(array_union(array(0), ValueSpace), m.value))
AND forall(compactedLedgers, l -> l IS NULL OR forall(l, m -> m.id BETWEEN 1 AND MessageSentLimit
                      AND array_contains(array_union(array(0), KeySpace), m.key)
                      AND array_contains(array_union(array(0), ValueSpace), m.value)))
AND (phaseOneResult IS NULL OR (
        forall(phaseOneResult.latestForKey, e -> e.pos BETWEEN 1 AND size(messages))
        AND phaseOneResult.readPosition BETWEEN 1 AND size(messages)))
AND compactorState IN ('Compactor_In_PhaseOne', 'Compactor_In_PhaseTwoWrite', 'Compactor_In_PhaseTwoUpdateContext',
                       'Compactor_In_PhaseTwoUpdateHorizon', 'Compactor_In_PhaseTwoPersistCusror',
                       'Compactor_In_PhaseTwoDeleteLedger')
AND compactionHorizon BETWEEN 0 AND MessageSentLimit
AND compactedTopicContext BETWEEN 0 AND CompactionTimesLimit
AND crashTimes BETWEEN 0 AND MaxCrashTimes
AND (cursor IS NULL OR (cursor.compactionHorizon BETWEEN 1 AND MessageSentLimit
                        AND cursor.compactedTopicContext BETWEEN 1 AND CompactionTimesLimit))
