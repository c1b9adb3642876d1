-- BookKeeperProtocol.tla: BookieSendsAddFencedResponse
-- A fenced bookie refuses a regular add.
WITH msgs AS (
    SELECT f.*, mm.mi, mm.m.msg AS msg, mm.m.count AS cnt
    FROM frontier AS f
    LATERAL VIEW posexplode(filter(f.messages, m -> m.msg.type = 'AddEntryRequestMessage' AND m.count >= 1)) mm AS mi, m  -- \E msg \in DOMAIN messages (the deliverable ones of its type)
),

enabled_pre AS (
    SELECT *, array_position(Bookies, msg.bookie) - 1 AS bi, named_struct('type', 'AddEntryResponseMessage', 'bookie', msg.bookie, 'cid', msg.cid, 'entry', msg.entry, 'lac', CAST(NULL AS INT), 'recovery', msg.recovery, 'success', false, 'entry_id', CAST(NULL AS INT), 'fence', CAST(NULL AS BOOLEAN), 'code', CAST(NULL AS STRING)) AS resp
    FROM msgs
    WHERE msg.type = 'AddEntryRequestMessage' AND cnt >= 1
      AND NOT msg.recovery AND b_fenced[array_position(Bookies, msg.bookie) - 1]
      AND NOT exists(messages, m2 -> m2.msg.type = msg.type AND m2.count >= 1
                        AND m2.msg.recovery <=> msg.recovery AND m2.msg.entry.id < msg.entry.id
                        AND m2.msg.cid = msg.cid AND m2.msg.bookie = msg.bookie)
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
        mi * 2 + di AS _choice
    FROM dc
),

final AS (
    SELECT
        messages2 AS messages,
        meta_status,
        meta_fragments,
        meta_last_entry,
        meta_version,
        b_entries,
        b_fenced,
        b_lac,
        clients,
        _parent, _choice
    FROM enabled
)

SELECT * FROM final
