-- LedgerChaining.tla: Abdicate(c)
-- A client that believes it leads learns it does not, and returns to WAITING.
WITH choices AS (
    SELECT f.*, cl.ci, cl.c
    FROM frontier AS f
    LATERAL VIEW posexplode(Clients) cl AS ci, c          -- \E c \in Clients
),

enabled AS (
    SELECT * FROM choices
    WHERE c_state[ci].leader = true
      AND md_leader <> c
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
