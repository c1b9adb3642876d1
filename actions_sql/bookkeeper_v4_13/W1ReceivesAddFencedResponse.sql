-- BookKeeperProtocol_v4_13.tla: W1ReceivesAddFencedResponse
-- w1 takes the earliest delivered fenced response from a bookie of its ensemble and stops (status Nil).
WITH choices AS (
    SELECT f.*, mi, x
    FROM frontier AS f
    LATERAL VIEW posexplode(filter(f.messages, m -> m.msg.type = 'AddEntryResponseMessage' AND m.count >= 1)) AS mi, x
    -- \E msg \in DOMAIN messages (the deliverable ones of its type, in the bag's order)
),

enabled AS (
    SELECT * FROM choices
    WHERE w1.status = 'STATUS_OPEN'
      AND x.msg.type = 'AddEntryResponseMessage' AND x.count >= 1
      AND NOT exists(messages, y -> y.msg.type = x.msg.type AND y.count >= 1                  -- IsEarliestMsg
                                    AND y.msg.recovery <=> x.msg.recovery
                                    AND y.msg.entry.id < x.msg.entry.id AND y.msg.bookie = x.msg.bookie)
      AND x.msg.recovery = false
      AND x.msg.success = false
      AND array_contains(w1.curr_fragment.ensemble, x.msg.bookie)
),

final AS (
    SELECT
        meta_status, meta_fragments, meta_last_entry, meta_version, b_entries, b_fenced, b_lac,
        named_struct(
            'meta_version', w1.meta_version, 'status', 'Nil', 'curr_fragment', w1.curr_fragment,
            'pending_add_ops', w1.pending_add_ops, 'lap', w1.lap, 'lac', w1.lac, 'confirmed', w1.confirmed,
            'fenced', w1.fenced, 'curr_read_entry', w1.curr_read_entry, 'has_entry', w1.has_entry,
            'no_such_entry', w1.no_such_entry, 'recovery_phase', w1.recovery_phase) AS w1,
        w2,
        transform(messages, y -> IF(y.msg <=> x.msg, named_struct('msg', y.msg, 'count', y.count - 1), y)) AS messages,
        _parent, mi AS _choice
    FROM enabled
)

SELECT * FROM final
