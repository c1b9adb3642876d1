-- LedgerChaining.tla: CloseOwnLedgerBadVersion(c)
-- Another client changed the metadata of the leader's ledger: the client abdicates.
WITH choices AS (
    SELECT f.*, cl.ci, cl.c
    FROM frontier AS f
    LATERAL VIEW posexplode(Clients) cl AS ci, c          -- \E c \in Clients
),

enabled AS (
    SELECT * FROM choices
    WHERE c_state[ci].leader = true
      AND c_state[ci].status = 'HAS_OPEN_LEDGER'
      AND exists(b_ledgers, l -> l.id = c_state[ci].ledger.id)
      AND CASE WHEN c_state[ci].leader AND c_state[ci].status = 'HAS_OPEN_LEDGER'
                    AND exists(b_ledgers, l -> l.id = c_state[ci].ledger.id)
               THEN c_state[ci].ledger.version < md_ledgers[c_state[ci].ledger.id - 1].version
               ELSE false END
),

final AS (
    SELECT
        transform(c_state, (x, i) -> IF(i = ci, named_struct(
            'client', x.client, 'leader', false, 'status', 'WAITING',
            'llist', x.llist, 'llist_version', x.llist_version, 'ledger', x.ledger), x)) AS c_state,
        md_llist, md_llist_version, md_ledgers, md_leader, md_next_lid, b_ledgers, next_entry_id,
        _parent, ci AS _choice
    FROM enabled
)

SELECT * FROM final
