-- BookKeeperProtocol_v4_13.tla: NoOutOfOrderEntries (invariant)
-- Every entry a bookie stores carries its own id as data (w1 writes data = id).
forall(b_entries, es -> forall(es, e -> e.id <=> e.data))
