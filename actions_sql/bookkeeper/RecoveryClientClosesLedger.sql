-- BookKeeperProtocol.tla: RecoveryClientClosesLedger(cid)
-- Recovery done: the client closes the ledger at the last recoverable entry, with its fragments.
WITH choices AS (
    SELECT f.*, cl.ci, cl.cid, f.clients[cl.ci] AS c
    FROM frontier AS f
    LATERAL VIEW posexplode(system.session.Clients) cl AS ci, cid       -- \E cid \in Clients
),

enabled AS (
    SELECT *, ci AS _choice
    FROM choices
    WHERE meta_version = c.meta_version AND meta_status = 'STATUS_IN_RECOVERY'
      AND c.status = 'STATUS_IN_RECOVERY' AND c.recovery_phase = 2
      AND c.last_recoverable_entry <> -1 AND size(c.pending_add_ops) = 0
),

final AS (
    SELECT
        messages,
        'STATUS_CLOSED' AS meta_status,
        c.fragments AS meta_fragments,
        c.last_recoverable_entry AS meta_last_entry,
        meta_version + 1 AS meta_version,
        b_entries,
        b_fenced,
        b_lac,
        transform(clients, (x, i) -> IF(i = ci, named_struct(
                'id', x.id,
                'meta_version', x.meta_version + 1,
                'status', 'STATUS_CLOSED',
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
