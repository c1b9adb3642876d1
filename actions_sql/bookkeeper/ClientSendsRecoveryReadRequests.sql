-- BookKeeperProtocol.tla: ClientSendsRecoveryReadRequests(cid), with GetRecoveryReadRequests
-- Once fenced with quorum coverage (or after a recovered entry), read the next entry from the recovery ensemble.
WITH choices AS (
    SELECT f.*, cl.ci, cl.cid, f.clients[cl.ci] AS c
    FROM frontier AS f
    LATERAL VIEW posexplode(system.session.Clients) cl AS ci, cid       -- \E cid \in Clients
),

pre AS (
    SELECT *, c.lap + 1 AS next_entry_id
    FROM choices
    WHERE c.status = 'STATUS_IN_RECOVERY'
      AND ((c.recovery_phase = 2 AND c.last_recoverable_entry = -1 AND c.curr_read_entry = -1)
           OR (c.recovery_phase = 1
               AND size(c.fenced) >= size(c.recovery_ensemble) - AckQuorum + 1))   -- HasQuorumCoverage
),
to_send AS (
    SELECT *, transform(c.recovery_ensemble, b -> named_struct('type', 'ReadRequestMessage', 'bookie', b, 'cid', c.id, 'entry', CAST(NULL AS STRUCT<id:INT, data:INT>), 'lac', CAST(NULL AS INT), 'recovery', CAST(NULL AS BOOLEAN), 'success', CAST(NULL AS BOOLEAN), 'entry_id', next_entry_id, 'fence', true, 'code', CAST(NULL AS STRING))) AS new_msgs
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
                'pending_add_ops', x.pending_add_ops,
                'lap', x.lap,
                'lac', x.lac,
                'confirmed', x.confirmed,
                'fenced', CAST(array() AS ARRAY<STRING>),
                'recovery_ensemble', x.recovery_ensemble,
                'curr_read_entry', next_entry_id,
                'read_responses', x.read_responses,
                'recovery_phase', 2,
                'last_recoverable_entry', x.last_recoverable_entry), x)) AS clients,
        _parent, _choice
    FROM enabled
)

SELECT * FROM final
