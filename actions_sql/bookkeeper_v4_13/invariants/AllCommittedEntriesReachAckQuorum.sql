-- BookKeeperProtocol_v4_13.tla: AllCommittedEntriesReachAckQuorum (invariant)
-- Once closed, each entry up to the ledger's end is stored by AckQuorum bookies of its fragment's ensemble.
meta_status != 'STATUS_CLOSED'
OR meta_last_entry <= 0
OR forall(sequence(1, meta_last_entry), id ->
       -- EntryIdReachesAckQuorum(FragmentOfEntryId(id).ensemble, id)
       size(filter(
           CASE WHEN size(meta_fragments) = 1 THEN meta_fragments[0]
                WHEN element_at(meta_fragments, -1).first_entry_id <= id THEN element_at(meta_fragments, -1)
                ELSE element_at(filter(meta_fragments, f1 -> exists(meta_fragments, f2 ->
                         f1.id = f2.id - 1 AND f1.first_entry_id <= id AND f2.first_entry_id > id)), 1)
           END.ensemble,
           b -> exists(element_at(b_entries, CAST(array_position(Bookies, b) AS INT)), e -> e.id = id))) >= AckQuorum)
