-- BookKeeperProtocol.tla: ClientReceivesAddFencedResponse(cid)
-- A fenced response tells the writer that recovery began: it withdraws.
WITH choices AS (
    SELECT f.*, cl.ci, cl.cid, f.clients[cl.ci] AS c
    FROM frontier AS f
    LATERAL VIEW posexplode(system.session.Clients) cl AS ci, cid       -- \E cid \in Clients
),

msgs AS (
    SELECT f.*, mm.mi, mm.m.msg AS msg, mm.m.count AS cnt
    FROM choices AS f
    LATERAL VIEW posexplode(filter(f.messages, m -> m.msg.type = 'AddEntryResponseMessage' AND m.count >= 1 AND m.msg.cid = cid)) mm AS mi, m  -- \E msg \in DOMAIN messages (the deliverable ones of its type)
),
enabled AS (
    SELECT *, ci * 256 + mi AS _choice
    FROM msgs
    WHERE c.status = 'STATUS_OPEN'
      AND msg.cid = cid AND msg.type = 'AddEntryResponseMessage' AND cnt >= 1
      AND NOT exists(messages, m2 -> m2.msg.type = msg.type AND m2.count >= 1
                        AND m2.msg.recovery <=> msg.recovery AND m2.msg.entry.id < msg.entry.id
                        AND m2.msg.cid = msg.cid AND m2.msg.bookie = msg.bookie)
      AND msg.recovery = false AND msg.success = false
      AND array_contains(c.curr_fragment.ensemble, msg.bookie)
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
                'status', 'CLIENT_WITHDRAWN',
                'fragments', x.fragments,
                'curr_fragment', x.curr_fragment,
                'pending_add_ops', x.pending_add_ops,
                'lap', x.lap,
                'lac', x.lac,
                'confirmed', x.confirmed,
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
