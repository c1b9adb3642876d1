-- BookKeeperProtocol.tla: ClientClosesLedgerFail(cid)
-- The writer cannot close a ledger that is no longer OPEN: it withdraws.
WITH choices AS (
    SELECT f.*, cl.ci, cl.cid, f.clients[cl.ci] AS c
    FROM frontier AS f
    LATERAL VIEW posexplode(system.session.Clients) cl AS ci, cid       -- \E cid \in Clients
),

enabled AS (
    SELECT *, ci AS _choice
    FROM choices
    WHERE c.status = 'STATUS_OPEN' AND meta_status <> 'STATUS_OPEN'
),

final AS (
    SELECT
        messages,
        meta_status,
        meta_fragments,
        meta_last_entry,
        meta_version,
        b_entries,
        b_fenced,
        b_lac,
        transform(clients, (x, i) -> IF(i = ci, named_struct(
                'id', x.id,
                'meta_version', -1,
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
