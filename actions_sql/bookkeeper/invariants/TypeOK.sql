-- BookKeeperProtocol.tla: TypeOK (invariant)
meta_status IN ('Nil', 'STATUS_OPEN', 'STATUS_IN_RECOVERY', 'STATUS_CLOSED')
AND meta_last_entry >= 0
AND meta_version >= 0
AND size(b_fenced) = size(Bookies) AND forall(b_fenced, f -> f IS NOT NULL)             -- [Bookies -> BOOLEAN]
AND size(b_entries) = size(Bookies)                                                      -- [Bookies -> SUBSET Entry]
AND forall(b_entries, es -> forall(es, e -> e.id BETWEEN 1 AND SendLimit
                                          AND (e.data BETWEEN 1 AND SendLimit OR e.data = -1)))
AND size(b_lac) = size(Bookies) AND forall(b_lac, l -> l >= 0)                         -- [Bookies -> Nat]
