-- LedgerChaining.tla: WriteToLedger(c)
-- The leader writes its single entry to its open ledger on the bookies.
WITH choices AS (
    SELECT f.*, cl.ci, cl.c
    FROM frontier AS f
    LATERAL VIEW posexplode(Clients) cl AS ci, c          -- \E c \in Clients
),

enabled AS (
    SELECT * FROM choices
    WHERE c_state[ci].leader = true
      AND c_state[ci].status = 'HAS_OPEN_LEDGER'
      AND NOT exists(b_ledgers, l -> l.id = c_state[ci].ledger.id)
),

final AS (
    SELECT
        c_state, md_llist, md_llist_version, md_ledgers, md_leader, md_next_lid,
        array_sort(array_distinct(array_append(b_ledgers,
            named_struct('id', c_state[ci].ledger.id, 'entry', next_entry_id, 'fenced', false)))) AS b_ledgers,
        next_entry_id + 1 AS next_entry_id,
        _parent, ci AS _choice
    FROM enabled
)

SELECT * FROM final
