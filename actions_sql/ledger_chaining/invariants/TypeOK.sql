-- LedgerChaining.tla: TypeOK (invariant)
-- A boolean SQL expression over one state: TRUE where the invariant holds.
    -- c_state \in [Clients -> Client]
    transform(c_state, x -> x.client) = Clients
AND forall(c_state, x ->
        x.status IN ('WAITING', 'GET_MD_FOR_CLOSING', 'CLOSE_LAST_LEDGER',
                     'PENDING_CREATE_LEDGER', 'PENDING_APPEND_LEDGER', 'HAS_OPEN_LEDGER')
    AND x.llist_version >= -1
    AND forall(x.llist, l -> l >= 0)
    AND x.ledger.id >= 0 AND x.ledger.version >= -1)
    -- md_leader \in Clients
AND array_contains(Clients, md_leader)
AND md_llist_version >= 0
    -- md_next_lid = 1 \/ (md_next_lid > 1 /\ md_ledgers \in [1..(md_next_lid - 1) -> LedgerMetadata])
AND (md_next_lid = 1
     OR (md_next_lid > 1
         AND size(md_ledgers) = md_next_lid - 1
         AND forall(md_ledgers, m -> m.id >= 0 AND m.version >= -1)))
    -- b_ledgers \in SUBSET Ledger
AND forall(b_ledgers, l -> l.id >= 0 AND l.entry >= -1)
AND md_next_lid >= 0
