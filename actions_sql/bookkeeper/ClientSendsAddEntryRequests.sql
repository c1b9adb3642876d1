-- BookKeeperProtocol.tla: ClientSendsAddEntryRequests(cid), with SendAddEntryRequests(c, entry)
-- The writer sends the next entry to every bookie of its current fragment's ensemble.
WITH choices AS (
    SELECT f.*, cl.ci, cl.cid, f.clients[cl.ci] AS c
    FROM frontier AS f
    LATERAL VIEW posexplode(system.session.Clients) cl AS ci, cid       -- \E cid \in Clients
),

pre AS (
    SELECT *, named_struct('id', c.lap + 1, 'data', c.lap + 1) AS entry
    FROM choices
    WHERE c.status = 'STATUS_OPEN'
      AND c.lap - c.lac <= InflightLimit - 1
      AND c.lap + 1 <= SendLimit
),
to_send AS (
    SELECT *, transform(c.curr_fragment.ensemble, b -> named_struct('type', 'AddEntryRequestMessage', 'bookie', b, 'cid', c.id, 'entry', entry, 'lac', c.lac, 'recovery', false, 'success', CAST(NULL AS BOOLEAN), 'entry_id', CAST(NULL AS INT), 'fence', CAST(NULL AS BOOLEAN), 'code', CAST(NULL AS STRING))) AS new_msgs
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
                'pending_add_ops', sort_array(array_distinct(array_append(x.pending_add_ops, named_struct('entry', entry, 'fragment_id', x.curr_fragment.id, 'ensemble', x.curr_fragment.ensemble)))),
                'lap', entry.id,
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
