-- LedgerChaining.tla: Init
-- Starts with no leader role taken and no ledgers; md_leader = CHOOSE c \in Clients : TRUE,
-- which TLC resolves to the first client of the set.
WITH final AS (
    SELECT
        transform(Clients, c -> named_struct(
            'client', c, 'leader', false, 'status', 'WAITING',
            'llist', array(), 'llist_version', -1,
            'ledger', named_struct('id', 0, 'open', false, 'version', -1)   -- NoLedgerMetadata
        ))                  AS c_state,
        array()             AS md_llist,
        0                   AS md_llist_version,
        array()             AS md_ledgers,
        Clients[0]          AS md_leader,
        1                   AS md_next_lid,
        array()             AS b_ledgers,
        0                   AS next_entry_id
)
SELECT * FROM final
