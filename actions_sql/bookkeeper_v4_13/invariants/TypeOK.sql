-- BookKeeperProtocol_v4_13.tla: TypeOK (invariant)
-- Each variable in its type; WriterState for both clients.
    meta_status IN ('Nil', 'STATUS_OPEN', 'STATUS_IN_RECOVERY', 'STATUS_CLOSED')
AND meta_last_entry >= 0
AND meta_version >= 0
    -- b_fenced \in [Bookies -> BOOLEAN], b_entries \in [Bookies -> SUBSET Entry], b_lac \in [Bookies -> Nat]
AND size(b_fenced) = size(Bookies) AND forall(b_fenced, v -> v IS NOT NULL)
AND size(b_entries) = size(Bookies)
AND forall(b_entries, es -> forall(es, e -> e.id BETWEEN 1 AND SendLimit
                                            AND (e.data IS NULL OR e.data BETWEEN 1 AND SendLimit)))
AND size(b_lac) = size(Bookies) AND forall(b_lac, v -> v >= 0)
    -- w1 \in WriterState /\ w2 \in WriterState
AND forall(array(w1, w2), w ->
        (w.meta_version IS NULL OR w.meta_version >= 0)
    AND w.status IN ('Nil', 'STATUS_OPEN', 'STATUS_IN_RECOVERY', 'STATUS_CLOSED', 'STATUS_INVALID')
    AND (w.curr_fragment IS NULL
         OR (w.curr_fragment.id >= 0 AND w.curr_fragment.first_entry_id >= 0
             AND forall(w.curr_fragment.ensemble, b -> array_contains(Bookies, b))))
    AND forall(w.pending_add_ops, op ->
            op.entry.id BETWEEN 1 AND SendLimit
            AND (op.entry.data IS NULL OR op.entry.data BETWEEN 1 AND SendLimit)
            AND op.fragment_id >= 0 AND forall(op.ensemble, b -> array_contains(Bookies, b)))
    AND w.lap >= 0 AND w.lac >= 0
    AND size(w.confirmed) = SendLimit AND forall(w.confirmed, c -> forall(c, b -> array_contains(Bookies, b)))
    AND forall(w.fenced, b -> array_contains(Bookies, b))
    AND (w.curr_read_entry IS NULL
         OR (w.curr_read_entry.id BETWEEN 1 AND SendLimit
             AND (w.curr_read_entry.data IS NULL OR w.curr_read_entry.data BETWEEN 1 AND SendLimit)))
    AND forall(w.has_entry, b -> array_contains(Bookies, b))
    AND forall(w.no_such_entry, b -> array_contains(Bookies, b))
    AND w.recovery_phase BETWEEN 0 AND 4)
