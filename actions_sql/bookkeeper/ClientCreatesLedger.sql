-- BookKeeperProtocol.tla: ClientCreatesLedger(cid)
-- A client creates the ledger: the metadata gets status OPEN and a first fragment.
WITH choices AS (
    SELECT f.*, cl.ci, cl.cid, f.clients[cl.ci] AS c
    FROM frontier AS f
    LATERAL VIEW posexplode(system.session.Clients) cl AS ci, cid       -- \E cid \in Clients
),

enabled_pre AS (
    SELECT *, array_min(filter(
            transform(sequence(0, shiftleft(1, size(Bookies)) - 1),
                      mask -> filter(Bookies, (b, k) -> (shiftright(mask, k) & 1) = 1)),
            ens -> size(ens) = WriteQuorum
               AND NOT exists(ens, b -> array_contains(CAST(array() AS ARRAY<STRING>), b))
               AND forall(CAST(array() AS ARRAY<STRING>), b -> array_contains(ens, b))
               AND forall(meta_fragments, fr -> NOT (fr.ensemble <=> ens)))) AS ens
    FROM choices
    WHERE meta_status = 'Nil' AND c.meta_version = -1
),
enabled AS (
    SELECT *, named_struct('id', 1, 'ensemble', ens, 'first_entry_id', 1) AS fragment, ci AS _choice
    FROM enabled_pre
    WHERE ens IS NOT NULL
),

final AS (
    SELECT
        messages,
        'STATUS_OPEN' AS meta_status,
        array_append(meta_fragments, fragment) AS meta_fragments,
        meta_last_entry,
        1 AS meta_version,
        b_entries,
        b_fenced,
        b_lac,
        transform(clients, (x, i) -> IF(i = ci, named_struct(
                'id', x.id,
                'meta_version', 1,
                'status', 'STATUS_OPEN',
                'fragments', array_append(meta_fragments, fragment),
                'curr_fragment', fragment,
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
