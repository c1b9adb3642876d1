-- LedgerChaining.tla: GetLastLedger(c)
-- The new leader caches the ledger list, its version and the last ledger's metadata; with an
-- empty list it goes straight to PENDING_CREATE_LEDGER (the two disjuncts of the spec).
WITH choices AS (
    SELECT f.*, cl.ci, cl.c
    FROM frontier AS f
    LATERAL VIEW posexplode(Clients) cl AS ci, c          -- \E c \in Clients
),

enabled AS (
    SELECT * FROM choices
    WHERE c_state[ci].leader = true
      AND c_state[ci].status = 'GET_MD_FOR_CLOSING'
),

final AS (
    SELECT
        transform(c_state, (x, i) -> IF(i = ci,
            CASE WHEN size(md_llist) > 0 THEN named_struct(
                    'client', x.client, 'leader', x.leader, 'status', 'CLOSE_LAST_LEDGER',
                    'llist', md_llist, 'llist_version', md_llist_version,
                    'ledger', md_ledgers[md_llist[size(md_llist) - 1] - 1])      -- md_ledgers[Last(md_llist)]
                 ELSE named_struct(
                    'client', x.client, 'leader', x.leader, 'status', 'PENDING_CREATE_LEDGER',
                    'llist', md_llist, 'llist_version', md_llist_version,
                    'ledger', x.ledger)
            END, x)) AS c_state,
        md_llist, md_llist_version, md_ledgers, md_leader, md_next_lid, b_ledgers, next_entry_id,
        _parent, ci AS _choice
    FROM enabled
)

SELECT * FROM final
