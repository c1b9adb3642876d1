-- BookKeeperProtocol.tla: BookieSendsAddConfirmedResponse
-- A bookie stores an entry (unfenced, or a recovery add) and confirms it.
-- The guard "not fenced, or a recovery add" is a disjunction before any primed variable: TLC takes
-- each true disjunct as a step of its own, so a recovery add to an unfenced bookie is generated
-- twice, the same successors both times (docs/generated-counts.md).
WITH msgs AS (
    SELECT f.*, mm.mi, mm.m.msg AS msg, mm.m.count AS cnt, dj.d
    FROM frontier AS f
    LATERAL VIEW posexplode(filter(f.messages, m -> m.msg.type = 'AddEntryRequestMessage' AND m.count >= 1)) mm AS mi, m  -- \E msg \in DOMAIN messages (the deliverable ones of its type)
    LATERAL VIEW explode(array(0, 1)) dj AS d                                --   \/ disjunct 0 \/ disjunct 1
),

enabled_pre AS (
    SELECT *, array_position(Bookies, msg.bookie) - 1 AS bi, named_struct('type', 'AddEntryResponseMessage', 'bookie', msg.bookie, 'cid', msg.cid, 'entry', msg.entry, 'lac', CAST(NULL AS INT), 'recovery', msg.recovery, 'success', true, 'entry_id', CAST(NULL AS INT), 'fence', CAST(NULL AS BOOLEAN), 'code', CAST(NULL AS STRING)) AS resp
    FROM msgs
    WHERE msg.type = 'AddEntryRequestMessage' AND cnt >= 1
      AND NOT exists(messages, m2 -> m2.msg.type = msg.type AND m2.count >= 1
                        AND m2.msg.recovery <=> msg.recovery AND m2.msg.entry.id < msg.entry.id
                        AND m2.msg.cid = msg.cid AND m2.msg.bookie = msg.bookie)
      AND IF(d = 0, NOT b_fenced[array_position(Bookies, msg.bookie) - 1],  -- b_fenced[msg.bookie] = FALSE
                    msg.recovery)                                          -- msg.recovery = TRUE
),

dc AS (
    SELECT e.*, d.di, d.dcount
    FROM enabled_pre AS e
    LATERAL VIEW posexplode(array(-1, 1)) d AS di, dcount   -- \E delivered_count \in {-1, 1}
    WHERE NOT exists(messages, m -> m.msg <=> resp)
),
enabled AS (
    SELECT *,
        sort_array(array_append(
            transform(messages, m -> IF(m.msg <=> msg, named_struct('msg', m.msg, 'count', m.count - 1), m)),
            named_struct('msg', resp, 'count', dcount))) AS messages2,
        (mi * 2 + d) * 2 + di AS _choice
    FROM dc
),

final AS (
    SELECT
        messages2 AS messages,
        meta_status,
        meta_fragments,
        meta_last_entry,
        meta_version,
        transform(b_entries, (x, i) -> IF(i = bi, sort_array(array_distinct(array_append(x, msg.entry))), x)) AS b_entries,
        b_fenced,
        transform(b_lac, (x, i) -> IF(i = bi, msg.lac, x)) AS b_lac,
        clients,
        _parent, _choice
    FROM enabled
)

SELECT * FROM final
