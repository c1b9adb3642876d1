-- BookKeeperProtocol.tla: ClientReceivesFencingReadLacResponse(cid)
-- During fencing, the recovery client records the fenced bookie and the highest LAC seen.
WITH choices AS (
    SELECT f.*, cl.ci, cl.cid, f.clients[cl.ci] AS c
    FROM frontier AS f
    LATERAL VIEW posexplode(system.session.Clients) cl AS ci, cid       -- \E cid \in Clients
),

msgs AS (
    SELECT f.*, mm.mi, mm.m.msg AS msg, mm.m.count AS cnt
    FROM choices AS f
    LATERAL VIEW posexplode(filter(f.messages, m -> m.msg.type = 'FenceResponseMessage' AND m.count >= 1 AND m.msg.cid = cid)) mm AS mi, m  -- \E msg \in DOMAIN messages (the deliverable ones of its type)
),
enabled AS (
    SELECT *, greatest(msg.lac, c.curr_fragment.first_entry_id - 1) AS lac, ci * 256 + mi AS _choice
    FROM msgs
    WHERE c.recovery_phase = 1
      AND msg.cid = cid AND msg.type = 'FenceResponseMessage' AND cnt >= 1
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
                'pending_add_ops', x.pending_add_ops,
                'lap', IF(lac > x.lap, lac, x.lap),
                'lac', IF(lac > x.lac, lac, x.lac),
                'confirmed', x.confirmed,
                'fenced', sort_array(array_distinct(array_append(x.fenced, msg.bookie))),
                'recovery_ensemble', x.recovery_ensemble,
                'curr_read_entry', x.curr_read_entry,
                'read_responses', x.read_responses,
                'recovery_phase', x.recovery_phase,
                'last_recoverable_entry', x.last_recoverable_entry), x)) AS clients,
        _parent, _choice
    FROM enabled
)

SELECT * FROM final
