-- LedgerChaining.tla: CreateLedger(c)
-- The leader creates ledger md_next_lid (open, version 0) in the metadata store.
WITH choices AS (
    SELECT f.*, cl.ci, cl.c
    FROM frontier AS f
    LATERAL VIEW posexplode(Clients) cl AS ci, c          -- \E c \in Clients
),

enabled AS (
    SELECT *, named_struct('id', md_next_lid, 'open', true, 'version', 0) AS next_ledger
    FROM choices
    WHERE c_state[ci].leader = true
      AND c_state[ci].status = 'PENDING_CREATE_LEDGER'
),

final AS (
    SELECT
        transform(c_state, (x, i) -> IF(i = ci, named_struct(
            'client', x.client, 'leader', x.leader, 'status', 'PENDING_APPEND_LEDGER',
            'llist', x.llist, 'llist_version', x.llist_version, 'ledger', next_ledger), x)) AS c_state,
        md_llist, md_llist_version,
        -- md_ledgers @@ (next_ledger.id :> next_ledger): the domain is 1..md_next_lid-1, so this appends
        CASE WHEN md_next_lid = size(md_ledgers) + 1 THEN array_append(md_ledgers, next_ledger)
             WHEN md_next_lid <= size(md_ledgers) THEN md_ledgers
             ELSE raise_error('CreateLedger: md_ledgers would get a gap in its domain')
        END AS md_ledgers,
        md_leader,
        md_next_lid + 1 AS md_next_lid,
        b_ledgers, next_entry_id,
        _parent, ci AS _choice
    FROM enabled
)

SELECT * FROM final
