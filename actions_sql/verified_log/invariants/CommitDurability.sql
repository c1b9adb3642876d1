-- CommitDurability.p: an entry announced committed was stored on at least NumReplicas distinct nodes
-- (ever), unless the coordinator declared it durable
forall(sequence(0, NumProducers * NumEntries - 1),
       q -> (shiftright(committed, q) & 1) = 0 OR (shiftright(durable, q) & 1) = 1
            OR bit_count(stored[q]) >= NumReplicas)
