-- compaction.tla: ModelProducer /\ Producer
-- \E inputKey \in KeySet, inputValue \in ValueSet : messages' = Append(messages, [id |-> Len(messages) + 1, ...])
WITH choices AS (
    SELECT f.*, k.ki, k.key, v.vi, v.value
    FROM frontier AS f
    LATERAL VIEW posexplode(array_sort(array_union(array(0), KeySpace))) k AS ki, key
    LATERAL VIEW posexplode(array_sort(array_union(array(0), ValueSpace))) v AS vi, value
),

enabled AS (
    SELECT * FROM choices
    WHERE ModelProducer
      AND size(messages) < MessageSentLimit
),

final AS (
    SELECT
        array_append(messages, named_struct('id', size(messages) + 1, 'key', key, 'value', value)) AS messages,
        compactedLedgers, cursor, compactorState, phaseOneResult, compactionHorizon,
        compactedTopicContext, crashTimes, consumeTimes,
        _parent, ki * size(array_union(array(0), ValueSpace)) + vi AS _choice
    FROM enabled
)

SELECT * FROM final
