-- BookKeeperProtocol.tla: BookieSendsFencingReadLacResponse
-- A bookie fences the ledger and answers with its LAC.
WITH msgs AS (
    SELECT f.*, mm.mi, mm.m.msg AS msg, mm.m.count AS cnt
    FROM frontier AS f
    LATERAL VIEW posexplode(filter(f.messages, m -> m.msg.type = 'FenceRequestMessage' AND m.count >= 1)) mm AS mi, m  -- \E msg \in DOMAIN messages (the deliverable ones of its type)
),

enabled_pre AS (
    SELECT *, array_position(Bookies, msg.bookie) - 1 AS bi, named_struct('type', 'FenceResponseMessage', 'bookie', msg.bookie, 'cid', msg.cid, 'entry', CAST(NULL AS STRUCT<id:INT, data:INT>), 'lac', b_lac[array_position(Bookies, msg.bookie) - 1], 'recovery', CAST(NULL AS BOOLEAN), 'success', CAST(NULL AS BOOLEAN), 'entry_id', CAST(NULL AS INT), 'fence', CAST(NULL AS BOOLEAN), 'code', CAST(NULL AS STRING)) AS resp
    FROM msgs
    WHERE msg.type = 'FenceRequestMessage' AND cnt >= 1
      AND true
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
        transform(b_fenced, (x, i) -> IF(i = bi, true, x)) AS b_fenced,
        b_lac,
        clients,
        _parent, _choice
    FROM enabled
)

SELECT * FROM final
