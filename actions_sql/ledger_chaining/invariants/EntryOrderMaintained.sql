-- LedgerChaining.tla: EntryOrderMaintained (invariant)
-- Entries across ledgers keep temporal order: a later ledger never holds an earlier entry.
forall(b_ledgers, l1 -> NOT exists(b_ledgers, l2 ->
        l1.id < l2.id
    AND l1.entry > l2.entry
    AND l1.entry <> -1                                                  -- neither is an empty fenced ledger
    AND l2.entry <> -1))
