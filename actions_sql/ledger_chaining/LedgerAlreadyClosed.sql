-- LedgerChaining.tla: LedgerAlreadyClosed(c)
-- The last ledger is already closed, so the leader moves on to creating a new one.
WITH choices AS (
    SELECT f.*, cl.ci, cl.c
    FROM frontier AS f
    LATERAL VIEW posexplode(Clients) cl AS ci, c          -- \E c \in Clients
),

enabled AS (
    SELECT * FROM choices
    WHERE c_state[ci].leader = true
      AND c_state[ci].status = 'CLOSE_LAST_LEDGER'
      AND c_state[ci].ledger.open = false
),

final AS (
    SELECT
        transform(c_state, (x, i) -> IF(i = ci, named_struct(
            'client', x.client, 'leader', x.leader, 'status', 'PENDING_CREATE_LEDGER',
            'llist', x.llist, 'llist_version', x.llist_version, 'ledger', x.ledger), x)) AS c_state,
        md_llist, md_llist_version, md_ledgers, md_leader, md_next_lid, b_ledgers, next_entry_id,
        _parent, ci AS _choice
    FROM enabled
)

SELECT * FROM final
