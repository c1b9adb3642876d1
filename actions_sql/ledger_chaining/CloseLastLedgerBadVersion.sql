-- LedgerChaining.tla: CloseLastLedgerBadVersion(c)
-- Another client changed the ledger's metadata meanwhile: back off to GET_MD_FOR_CLOSING.
WITH choices AS (
    SELECT f.*, cl.ci, cl.c
    FROM frontier AS f
    LATERAL VIEW posexplode(Clients) cl AS ci, c          -- \E c \in Clients
),

enabled AS (
    SELECT * FROM choices
    WHERE c_state[ci].leader = true
      AND c_state[ci].status = 'CLOSE_LAST_LEDGER'
      AND c_state[ci].ledger.open = true
      AND CASE WHEN c_state[ci].leader AND c_state[ci].status = 'CLOSE_LAST_LEDGER' AND c_state[ci].ledger.open
               THEN c_state[ci].ledger.version < md_ledgers[c_state[ci].ledger.id - 1].version
               ELSE false END
),

final AS (
    SELECT
        transform(c_state, (x, i) -> IF(i = ci, named_struct(
            'client', x.client, 'leader', x.leader, 'status', 'GET_MD_FOR_CLOSING',
            'llist', x.llist, 'llist_version', x.llist_version, 'ledger', x.ledger), x)) AS c_state,
        md_llist, md_llist_version, md_ledgers, md_leader, md_next_lid, b_ledgers, next_entry_id,
        _parent, ci AS _choice
    FROM enabled
)

SELECT * FROM final
