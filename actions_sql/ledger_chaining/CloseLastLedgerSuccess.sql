-- LedgerChaining.tla: CloseLastLedgerSuccess(c), with FenceLedger(ledger_id)
-- The leader closes the previous leader's ledger (metadata version matches) and fences it on
-- the bookies, creating it there fenced and empty if it was never written.
WITH choices AS (
    SELECT f.*, cl.ci, cl.c
    FROM frontier AS f
    LATERAL VIEW posexplode(Clients) cl AS ci, c          -- \E c \in Clients
),

enabled AS (
    SELECT *, c_state[ci].ledger.id AS ledger_id FROM choices
    WHERE c_state[ci].leader = true
      AND c_state[ci].status = 'CLOSE_LAST_LEDGER'
      AND c_state[ci].ledger.open = true
      -- CASE keeps the lookup lazy, as TLC evaluates conjuncts in order
      AND CASE WHEN c_state[ci].leader AND c_state[ci].status = 'CLOSE_LAST_LEDGER' AND c_state[ci].ledger.open
               THEN c_state[ci].ledger.version = md_ledgers[c_state[ci].ledger.id - 1].version
               ELSE false END
),

final AS (
    SELECT
        transform(c_state, (x, i) -> IF(i = ci, named_struct(
            'client', x.client, 'leader', x.leader, 'status', 'PENDING_CREATE_LEDGER',
            'llist', x.llist, 'llist_version', x.llist_version, 'ledger', x.ledger), x)) AS c_state,
        md_llist, md_llist_version,
        transform(md_ledgers, (m, i) -> IF(i = ledger_id - 1,
            named_struct('id', m.id, 'open', false, 'version', m.version + 1), m)) AS md_ledgers,
        md_leader, md_next_lid,
        CASE WHEN exists(b_ledgers, l -> l.id = ledger_id)                 -- FenceLedger(ledger_id)
             THEN array_sort(array_distinct(transform(b_ledgers, l -> IF(l.id = ledger_id,
                      named_struct('id', l.id, 'entry', l.entry, 'fenced', true), l))))
             ELSE array_sort(array_distinct(array_append(b_ledgers,
                      named_struct('id', ledger_id, 'entry', -1, 'fenced', true))))
        END AS b_ledgers,
        next_entry_id,
        _parent, ci AS _choice
    FROM enabled
)

SELECT * FROM final
