-- BookKeeperProtocol.tla: ClientStartsRecovery(cid), with GetFencedReadLacRequests(c, ensemble)
-- A client starts recovery: status IN_RECOVERY, and a fencing LAC read to the last ensemble.
WITH choices AS (
    SELECT f.*, cl.ci, cl.cid, f.clients[cl.ci] AS c
    FROM frontier AS f
    LATERAL VIEW posexplode(system.session.Clients) cl AS ci, cid       -- \E cid \in Clients
),

pre AS (
    SELECT *, element_at(meta_fragments, -1) AS last_fragment
    FROM choices
    WHERE c.status = 'Nil' AND meta_status IN ('STATUS_OPEN', 'STATUS_IN_RECOVERY')
),
to_send AS (
    SELECT *, transform(last_fragment.ensemble, b -> named_struct('type', 'FenceRequestMessage', 'bookie', b, 'cid', c.id, 'entry', CAST(NULL AS STRUCT<id:INT, data:INT>), 'lac', CAST(NULL AS INT), 'recovery', CAST(NULL AS BOOLEAN), 'success', CAST(NULL AS BOOLEAN), 'entry_id', CAST(NULL AS INT), 'fence', CAST(NULL AS BOOLEAN), 'code', CAST(NULL AS STRING))) AS new_msgs
    FROM pre
),
sends AS (
    SELECT t.*, s.mask
    FROM to_send AS t
    LATERAL VIEW explode(sequence(0, shiftleft(1, size(t.new_msgs)) - 1)) s AS mask
    WHERE NOT exists(t.new_msgs, n -> exists(t.messages, m -> m.msg <=> n))
),
enabled AS (
    SELECT *,
        sort_array(concat(messages, transform(new_msgs, (n, k) ->
            named_struct('msg', n, 'count', IF((shiftright(mask, k) & 1) = 1, -1, 1))))) AS messages2,
        ci * 64 + mask AS _choice
    FROM sends
),

final AS (
    SELECT
        messages2 AS messages,
        'STATUS_IN_RECOVERY' AS meta_status,
        meta_fragments,
        meta_last_entry,
        meta_version + 1 AS meta_version,
        b_entries,
        b_fenced,
        b_lac,
        transform(clients, (x, i) -> IF(i = ci, named_struct(
                'id', x.id,
                'meta_version', meta_version + 1,
                'status', 'STATUS_IN_RECOVERY',
                'fragments', meta_fragments,
                'curr_fragment', last_fragment,
                'pending_add_ops', x.pending_add_ops,
                'lap', x.lap,
                'lac', x.lac,
                'confirmed', x.confirmed,
                'fenced', x.fenced,
                'recovery_ensemble', last_fragment.ensemble,
                'curr_read_entry', x.curr_read_entry,
                'read_responses', x.read_responses,
                'recovery_phase', 1,
                'last_recoverable_entry', x.last_recoverable_entry), x)) AS clients,
        _parent, _choice
    FROM enabled
)

SELECT * FROM final
