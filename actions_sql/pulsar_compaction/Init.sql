-- compaction.tla: Init
-- With ModelProducer, messages = <<>>; otherwise messages ranges over every sequence of
-- MessageSentLimit messages [id |-> i, key \in KeySet, value \in ValueSet]. Combination c picks, for
-- message i, digit i of c in base |KeySet \X ValueSet| (message 1 the most significant digit).
WITH pairs AS (
    SELECT flatten(transform(array_sort(array_union(array(0), KeySpace)), k ->
               transform(array_sort(array_union(array(0), ValueSpace)), v ->
                   named_struct('key', k, 'value', v)))) AS kv
),

choices AS (
    SELECT kv, explode(IF(ModelProducer, array(CAST(0 AS BIGINT)),
                          sequence(CAST(0 AS BIGINT), CAST(pow(size(kv), MessageSentLimit) AS BIGINT) - 1))) AS c
    FROM pairs
),

final AS (
    SELECT
        IF(ModelProducer OR MessageSentLimit = 0,
           CAST(array() AS ARRAY<STRUCT<id:INT, key:INT, value:INT>>),
           transform(sequence(1, MessageSentLimit), i -> named_struct(
               'id', i,
               'key', kv[CAST((c DIV CAST(pow(size(kv), MessageSentLimit - i) AS BIGINT)) % size(kv) AS INT)].key,
               'value', kv[CAST((c DIV CAST(pow(size(kv), MessageSentLimit - i) AS BIGINT)) % size(kv) AS INT)].value)))
                                                            AS messages,
        CAST(array_repeat(NULL, CompactionTimesLimit) AS ARRAY<ARRAY<STRUCT<id:INT, key:INT, value:INT>>>)
                                                            AS compactedLedgers,
        CAST(NULL AS STRUCT<compactionHorizon:INT, compactedTopicContext:INT>) AS cursor,
        'Compactor_In_PhaseOne'                             AS compactorState,
        CAST(NULL AS STRUCT<readPosition:INT, latestForKey:ARRAY<STRUCT<key:INT, pos:INT>>>) AS phaseOneResult,
        0                                                   AS compactionHorizon,
        0                                                   AS compactedTopicContext,
        0                                                   AS crashTimes,
        0                                                   AS consumeTimes,
        c                                                   AS _choice
    FROM choices
)

SELECT * FROM final
