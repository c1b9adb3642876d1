-- BookKeeperProtocol_v4_13.tla: W2ReceivesFencingReadLacResponse
-- w2 takes a delivered fence response: the bookie is fenced for it, and until the read phase has
-- started a higher lac (at least the fragment's first entry - 1) becomes w2's lac and lap.
WITH choices AS (
    SELECT f.*, mi, x
    FROM frontier AS f
    LATERAL VIEW posexplode(filter(f.messages, m -> m.msg.type = 'FenceResponseMessage' AND m.count >= 1)) AS mi, x
    -- \E msg \in DOMAIN messages (the deliverable ones of its type, in the bag's order)
),

enabled AS (
    SELECT *,
        greatest(x.msg.lac, w2.curr_fragment.first_entry_id - 1) AS lac,
        NOT exists(messages, y -> y.msg.type = 'ReadRequestMessage') AS not_started_read_phase
    FROM choices
    WHERE x.msg.type = 'FenceResponseMessage' AND x.count >= 1
),

final AS (
    SELECT
        meta_status, meta_fragments, meta_last_entry, meta_version, b_entries, b_fenced, b_lac, w1,
        -- w2.lac is never Nil here (it starts at 0), so the spec's "w2.lac = Nil \/" never holds
        named_struct(
            'meta_version', w2.meta_version, 'status', w2.status, 'curr_fragment', w2.curr_fragment,
            'pending_add_ops', w2.pending_add_ops,
            'lap', IF(not_started_read_phase AND lac > w2.lac, lac, w2.lap),
            'lac', IF(not_started_read_phase AND lac > w2.lac, lac, w2.lac),
            'confirmed', w2.confirmed,
            'fenced', sort_array(array_distinct(array_append(w2.fenced, x.msg.bookie))),
            'curr_read_entry', w2.curr_read_entry, 'has_entry', w2.has_entry,
            'no_such_entry', w2.no_such_entry, 'recovery_phase', w2.recovery_phase) AS w2,
        transform(messages, y -> IF(y.msg <=> x.msg, named_struct('msg', y.msg, 'count', y.count - 1), y)) AS messages,
        _parent, mi AS _choice
    FROM enabled
)

SELECT * FROM final
