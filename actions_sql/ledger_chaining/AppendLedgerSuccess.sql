-- LedgerChaining.tla: AppendLedgerSuccess(c)
-- The leader appends its new ledger to the ledger list with the version it cached.
WITH choices AS (
    SELECT f.*, cl.ci, cl.c
    FROM frontier AS f
    LATERAL VIEW posexplode(Clients) cl AS ci, c          -- \E c \in Clients
),

enabled AS (
    SELECT *,
        array_append(c_state[ci].llist, c_state[ci].ledger.id) AS new_list,
        md_llist_version + 1 AS new_version
    FROM choices
    WHERE c_state[ci].leader = true
      AND c_state[ci].status = 'PENDING_APPEND_LEDGER'
      AND c_state[ci].llist_version = md_llist_version
),

final AS (
    SELECT
        transform(c_state, (x, i) -> IF(i = ci, named_struct(
            'client', x.client, 'leader', x.leader, 'status', 'HAS_OPEN_LEDGER',
            'llist', new_list, 'llist_version', new_version, 'ledger', x.ledger), x)) AS c_state,
        new_list AS md_llist,
        new_version AS md_llist_version,
        md_ledgers, md_leader, md_next_lid, b_ledgers, next_entry_id,
        _parent, ci AS _choice
    FROM enabled
)

SELECT * FROM final
