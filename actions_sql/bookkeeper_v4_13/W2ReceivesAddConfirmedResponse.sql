-- BookKeeperProtocol_v4_13.tla: W2ReceivesAddConfirmedResponse (ReceiveAddConfirmedResponse(w2, TRUE))
-- w2 takes the earliest delivered success response from a bookie of its ensemble, adds the bookie
-- to the entry's confirmed set, may advance its lac and drops the pending ops now committed.
WITH choices AS (
    SELECT f.*, mi, x
    FROM frontier AS f
    LATERAL VIEW posexplode(filter(f.messages, m -> m.msg.type = 'AddEntryResponseMessage' AND m.count >= 1)) AS mi, x
    -- \E msg \in DOMAIN messages (the deliverable ones of its type, in the bag's order)
),

enabled AS (
    SELECT * FROM choices
    WHERE w2.status = 'STATUS_IN_RECOVERY'
      AND x.msg.type = 'AddEntryResponseMessage' AND x.count >= 1
      AND NOT exists(messages, y -> y.msg.type = x.msg.type AND y.count >= 1                  -- IsEarliestMsg
                                    AND y.msg.recovery <=> x.msg.recovery
                                    AND y.msg.entry.id < x.msg.entry.id AND y.msg.bookie = x.msg.bookie)
      AND x.msg.recovery = true
      AND x.msg.success = true
      AND array_contains(w2.curr_fragment.ensemble, x.msg.bookie)
),

confirmed AS (
    SELECT *,
        -- AddToConfirmed(writer, msg.entry.id, msg.bookie)
        transform(w2.confirmed, (c, i) -> IF(i + 1 = x.msg.entry.id,
                                              sort_array(array_distinct(array_append(c, x.msg.bookie))), c)) AS conf
    FROM enabled
),

contiguous AS (
    -- MaxContiguousConfirmedEntry(confirmed): the length of the longest prefix of entry ids whose
    -- confirmed sets reach AckQuorum (0 when entry 1 does not).
    SELECT *,
        IF(array_position(transform(conf, c -> size(c) >= AckQuorum), false) = 0,
           size(conf),
           array_position(transform(conf, c -> size(c) >= AckQuorum), false) - 1) AS lac
    FROM confirmed
),

final AS (
    SELECT
        meta_status, meta_fragments, meta_last_entry, meta_version, b_entries, b_fenced, b_lac,
        w1,
        named_struct(
            'meta_version', w2.meta_version, 'status', w2.status, 'curr_fragment', w2.curr_fragment,
            -- MayBeRemoveFromPending(writer, confirmed, lac)
            'pending_add_ops', filter(w2.pending_add_ops,
                                      op -> size(element_at(conf, op.entry.id)) < AckQuorum OR op.entry.id > lac),
            'lap', w2.lap, 'lac', IF(lac > w2.lac, lac, w2.lac), 'confirmed', conf,
            'fenced', w2.fenced, 'curr_read_entry', w2.curr_read_entry, 'has_entry', w2.has_entry,
            'no_such_entry', w2.no_such_entry, 'recovery_phase', w2.recovery_phase) AS w2,
        transform(messages, y -> IF(y.msg <=> x.msg, named_struct('msg', y.msg, 'count', y.count - 1), y)) AS messages,
        _parent, mi AS _choice
    FROM contiguous LATERAL VIEW explode(array(0)) AS _split   -- one row: a method of its own (README, Writing a model)
)

SELECT * FROM final
