-- BookKeeperProtocol.tla: RecoveryClientReceivesAddConfirmedResponse(cid), with ReceiveAddConfirmedResponse(c, TRUE)
-- The client notes the bookie's confirmation and advances its LAC over entries at ack quorum.
WITH choices AS (
    SELECT f.*, cl.ci, cl.cid, f.clients[cl.ci] AS c
    FROM frontier AS f
    LATERAL VIEW posexplode(system.session.Clients) cl AS ci, cid       -- \E cid \in Clients
),

msgs AS (
    SELECT f.*, mm.mi, mm.m.msg AS msg, mm.m.count AS cnt
    FROM choices AS f
    LATERAL VIEW posexplode(filter(f.messages, m -> m.msg.type = 'AddEntryResponseMessage' AND m.count >= 1 AND m.msg.cid = f.c.id)) mm AS mi, m  -- \E msg \in DOMAIN messages (the deliverable ones of its type)
),
pre AS (
    SELECT *,
        transform(c.confirmed, (x, k) -> IF(k = msg.entry.id - 1,
                  sort_array(array_distinct(array_append(x, msg.bookie))), x)) AS confirmed
    FROM msgs
    WHERE c.status = 'STATUS_IN_RECOVERY'
      AND msg.cid = c.id AND msg.type = 'AddEntryResponseMessage' AND cnt >= 1
      AND NOT exists(messages, m2 -> m2.msg.type = msg.type AND m2.count >= 1
                        AND m2.msg.recovery <=> msg.recovery AND m2.msg.entry.id < msg.entry.id
                        AND m2.msg.cid = msg.cid AND m2.msg.bookie = msg.bookie)
      AND msg.recovery = true AND msg.success = true
      AND array_contains(c.curr_fragment.ensemble, msg.bookie)
),
with_lac AS (
    -- MaxContiguousConfirmedEntry(confirmed): the longest prefix of entry ids at ack quorum
    SELECT *, coalesce(nullif(array_position(transform(confirmed, x -> size(x) >= AckQuorum), false), 0) - 1,
                       size(confirmed)) AS new_lac
    FROM pre
),
enabled AS (
    SELECT *, ci * 256 + mi AS _choice FROM with_lac
),

final AS (
    SELECT
        transform(messages, m -> IF(m.msg <=> msg, named_struct('msg', m.msg, 'count', m.count - 1), m)) AS messages,
        meta_status,
        meta_fragments,
        meta_last_entry,
        meta_version,
        b_entries,
        b_fenced,
        b_lac,
        transform(clients, (x, i) -> IF(i = ci, named_struct(
                'id', x.id,
                'meta_version', x.meta_version,
                'status', x.status,
                'fragments', x.fragments,
                'curr_fragment', x.curr_fragment,
                'pending_add_ops', filter(x.pending_add_ops, op -> size(confirmed[op.entry.id - 1]) < AckQuorum OR op.entry.id > new_lac),
                'lap', x.lap,
                'lac', greatest(new_lac, x.lac),
                'confirmed', confirmed,
                'fenced', x.fenced,
                'recovery_ensemble', x.recovery_ensemble,
                'curr_read_entry', x.curr_read_entry,
                'read_responses', x.read_responses,
                'recovery_phase', x.recovery_phase,
                'last_recoverable_entry', x.last_recoverable_entry), x)) AS clients,
        _parent, _choice
    FROM enabled
)

SELECT * FROM final
