-- BookKeeperProtocol_v4_13.tla: BookieSendsReadResponse
-- A bookie takes a delivered read request, fences if the read fences, and answers with the entry
-- it stores under that id, or Nil (NoSuchEntry).
WITH choices AS (
    SELECT f.*, mi, x, dci, dc
    FROM frontier AS f
    LATERAL VIEW posexplode(filter(f.messages, m -> m.msg.type = 'ReadRequestMessage' AND m.count >= 1)) AS mi, x
    -- \E msg \in DOMAIN messages (the deliverable ones of its type, in the bag's order)
    LATERAL VIEW posexplode(array(-1, 1)) AS dci, dc               -- \E delivered_count \in {-1, 1}
),

received AS (
    SELECT *,
        CAST(array_position(Bookies, x.msg.bookie) AS INT) AS bpos,
        CAST(named_struct('type', 'ReadResponseMessage', 'bookie', x.msg.bookie,
                          -- CHOOSE entry \in b_entries[b] : entry.id = msg.entry_id, else Nil
                          'entry', try_element_at(filter(element_at(b_entries, CAST(array_position(Bookies, x.msg.bookie) AS INT)),
                                                         e -> e.id = x.msg.entry_id), 1),
                          'lac', NULL, 'recovery', NULL, 'success', NULL, 'entry_id', NULL, 'fence', x.msg.fence)
             AS struct<type:string, bookie:string, entry:struct<id:int, data:int>, lac:int, recovery:boolean,
                       success:boolean, entry_id:int, fence:boolean>) AS reply
    FROM choices
    WHERE x.msg.type = 'ReadRequestMessage' AND x.count >= 1
),

enabled AS (
    SELECT * FROM received
    WHERE NOT exists(messages, y -> y.msg <=> reply)
),

final AS (
    SELECT
        meta_status, meta_fragments, meta_last_entry, meta_version, b_entries,
        IF(x.msg.fence = true, transform(b_fenced, (v, i) -> IF(i + 1 = bpos, true, v)), b_fenced) AS b_fenced,
        b_lac, w1, w2,
        sort_array(array_append(
            transform(messages, y -> IF(y.msg <=> x.msg, named_struct('msg', y.msg, 'count', y.count - 1), y)),
            named_struct('msg', reply, 'count', dc)))   AS messages,
        _parent, mi * 2 + dci AS _choice
    FROM enabled
)

SELECT * FROM final
