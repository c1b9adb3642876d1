-- LedgerChaining.tla: AllNonEmptyLedgersInLedgerList (invariant)
-- No ledger that exists on the bookies is missing from the ledger list.
CASE WHEN size(b_ledgers) = 0 THEN true
     WHEN md_next_lid - 1 < 1 THEN true                                -- 1..0 is empty
     ELSE NOT exists(sequence(1, md_next_lid - 1), ledger_id ->
              exists(b_ledgers, l -> l.id = ledger_id)
          AND (size(md_llist) = 0 OR NOT array_contains(md_llist, ledger_id)))
END
