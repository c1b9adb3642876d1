-- BookKeeperProtocol_v4_13.tla: BookieSendsAddConfirmedResponse
-- A bookie takes the earliest delivered add request for it (not fenced, or a recovery add),
-- stores the entry, takes the request's lac and answers success (delivered or lost).
-- The guard "not fenced, or a recovery add" is a disjunction before any primed variable: TLC takes
-- each true disjunct as a step of its own, so a recovery add to an unfenced bookie is generated
-- twice, the same successors both times (docs/generated-counts.md).
WITH choices AS (
    SELECT f.*, mi, x, d, dci, dc
    FROM frontier AS f
    LATERAL VIEW posexplode(filter(f.messages, m -> m.msg.type = 'AddEntryRequestMessage' AND m.count >= 1)) AS mi, x
    -- \E msg \in DOMAIN messages (the deliverable ones of its type, in the bag's order)
    LATERAL VIEW explode(array(0, 1)) AS d                          -- \/ disjunct 0 \/ disjunct 1
    LATERAL VIEW posexplode(array(-1, 1)) AS dci, dc               -- \E delivered_count \in {-1, 1}
),

received AS (
    SELECT *,
        CAST(array_position(Bookies, x.msg.bookie) AS INT) AS bpos,
        CAST(named_struct('type', 'AddEntryResponseMessage', 'bookie', x.msg.bookie, 'entry', x.msg.entry,
                          'lac', NULL, 'recovery', x.msg.recovery, 'success', true, 'entry_id', NULL, 'fence', NULL)
             AS struct<type:string, bookie:string, entry:struct<id:int, data:int>, lac:int, recovery:boolean,
                       success:boolean, entry_id:int, fence:boolean>) AS reply
    FROM choices
    WHERE x.msg.type = 'AddEntryRequestMessage' AND x.count >= 1
),

enabled AS (
    SELECT * FROM received
    WHERE NOT exists(messages, y -> y.msg.type = x.msg.type AND y.count >= 1                  -- IsEarliestMsg
                                    AND y.msg.recovery <=> x.msg.recovery
                                    AND y.msg.entry.id < x.msg.entry.id AND y.msg.bookie = x.msg.bookie)
      AND IF(d = 0, element_at(b_fenced, bpos) = false,                  -- b_fenced[msg.bookie] = FALSE
                    x.msg.recovery = true)                               -- msg.recovery = TRUE
      AND NOT exists(messages, y -> y.msg <=> reply)
),

final AS (
    SELECT
        meta_status, meta_fragments, meta_last_entry, meta_version,
        transform(b_entries, (es, i) -> IF(i + 1 = bpos, sort_array(array_distinct(array_append(es, x.msg.entry))), es))
                                                    AS b_entries,
        b_fenced,
        transform(b_lac, (v, i) -> IF(i + 1 = bpos, x.msg.lac, v)) AS b_lac,
        w1, w2,
        sort_array(array_append(
            transform(messages, y -> IF(y.msg <=> x.msg, named_struct('msg', y.msg, 'count', y.count - 1), y)),
            named_struct('msg', reply, 'count', dc)))   AS messages,
        _parent, (mi * 2 + d) * 2 + dci AS _choice
    FROM enabled
)

SELECT * FROM final
