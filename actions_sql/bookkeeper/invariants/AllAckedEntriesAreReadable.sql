-- BookKeeperProtocol.tla: AllAckedEntriesAreReadable (invariant), with FragmentOfEntryId
-- Every entry a writer acknowledged is on some bookie of the ensemble that metadata names for it.
forall(clients, c ->
    NOT (c.status IN ('STATUS_OPEN', 'STATUS_CLOSED') AND c.lac > 0)
    OR forall(sequence(1, greatest(c.lac, 1)), eid ->
        exists(
            -- FragmentOfEntryId(eid, meta_fragments): fragments start at increasing entry ids,
            -- so it is the last one starting at or before eid (the only one if there is one)
            IF(size(meta_fragments) = 1, meta_fragments[0],
               element_at(filter(meta_fragments, fr -> fr.first_entry_id <= eid), -1)).ensemble,
            b -> exists(b_entries[array_position(Bookies, b) - 1], e -> e.id = eid))))
