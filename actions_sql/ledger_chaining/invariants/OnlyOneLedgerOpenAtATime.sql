-- LedgerChaining.tla: OnlyOneLedgerOpenAtATime (invariant)
-- Translated as written: l1, l2 range over DOMAIN md_llist (positions) and index md_ledgers.
CASE WHEN size(md_llist) = 0 THEN true
     ELSE size(filter(sequence(1, size(md_llist)), l -> md_ledgers[l - 1].open)) <= 1
END
