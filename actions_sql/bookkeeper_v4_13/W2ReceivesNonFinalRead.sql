-- BookKeeperProtocol_v4_13.tla: W2ReceivesNonFinalRead
-- w2 takes a delivered read response (an entry or NoSuchEntry) while other responses are still due.
WITH choices AS (
    SELECT f.*, mi, x
    FROM frontier AS f
    LATERAL VIEW posexplode(filter(f.messages, m -> m.msg.type = 'ReadResponseMessage' AND m.count >= 1)) AS mi, x
    -- \E msg \in DOMAIN messages (the deliverable ones of its type, in the bag's order)
    WHERE x.msg.type = 'ReadResponseMessage' AND x.count >= 1
),

responses AS (
    SELECT *,
        -- read_ensemble: FragmentOfEntryId(msg.entry.id).ensemble, or {} for a NoSuchEntry response
        IF(x.msg.entry IS NULL, CAST(array() AS array<string>),
           CASE WHEN size(meta_fragments) = 1 THEN meta_fragments[0]
                WHEN element_at(meta_fragments, -1).first_entry_id <= x.msg.entry.id THEN element_at(meta_fragments, -1)
                ELSE element_at(filter(meta_fragments, f1 -> exists(meta_fragments, f2 ->
                         f1.id = f2.id - 1 AND f1.first_entry_id <= x.msg.entry.id
                         AND f2.first_entry_id > x.msg.entry.id)), 1)
           END.ensemble)                                                       AS read_ensemble,
        IF(x.msg.entry IS NOT NULL, sort_array(array_distinct(array_append(w2.has_entry, x.msg.bookie))),
           w2.has_entry)                                                       AS has_entry,
        IF(x.msg.entry IS NULL, sort_array(array_distinct(array_append(w2.no_such_entry, x.msg.bookie))),
           w2.no_such_entry)                                                   AS no_such_entry,
        IF(x.msg.fence = true, sort_array(array_distinct(array_append(w2.fenced, x.msg.bookie))), w2.fenced)
                                                                               AS fenced
    FROM choices
),

counted AS (
    SELECT *,
        -- ReceivedAllResponses(has_entry, no_such_entry, read_ensemble), with ReadTimeoutCount: the
        -- bookies of the read ensemble with a lost read request or response
        size(has_entry) + size(no_such_entry)
          + size(filter(read_ensemble, b -> exists(messages, y -> y.count = -1 AND y.msg.bookie = b
                          AND y.msg.type IN ('ReadRequestMessage', 'ReadResponseMessage'))))
          = WriteQuorum                                                        AS received_all
    FROM responses
),

final AS (
    SELECT
        meta_status, meta_fragments, meta_last_entry, meta_version, b_entries, b_fenced, b_lac, w1,
        named_struct(
            'meta_version', w2.meta_version, 'status', w2.status, 'curr_fragment', w2.curr_fragment,
            'pending_add_ops', w2.pending_add_ops, 'lap', w2.lap, 'lac', w2.lac, 'confirmed', w2.confirmed,
            'fenced', fenced,
            'curr_read_entry', IF(x.msg.entry IS NOT NULL, x.msg.entry, w2.curr_read_entry),
            'has_entry', has_entry, 'no_such_entry', no_such_entry,
            'recovery_phase', w2.recovery_phase) AS w2,
        transform(messages, y -> IF(y.msg <=> x.msg, named_struct('msg', y.msg, 'count', y.count - 1), y)) AS messages,
        _parent, mi AS _choice
    FROM counted LATERAL VIEW explode(array(0)) AS _split   -- one row: a method of its own (README, Writing a model)
    WHERE NOT received_all
)

SELECT * FROM final
