-- BookKeeperProtocol_v4_13.tla: W2ChangesEnsemble (ChangeEnsemble(w2, TRUE))
-- A write to a bookie of w2's ensemble timed out (a lost add request or response): w2 replaces it
-- with a new ensemble starting at lac+1 (a new fragment, or the current one rewritten when it starts
-- there), drops the bookie from the confirmed sets of uncommitted entries and clears the timeouts.
-- TLC walks WriteTimeoutForBookie (an \E over the messages) and EnsembleAvailable (an \E over SUBSET
-- Bookies) before any primed variable, so the step is generated once for each lost add message of the
-- bookie times each valid ensemble, the same successor each time (docs/generated-counts.md).
WITH choices AS (
    SELECT f.*, bi, bookie
    FROM frontier AS f
    LATERAL VIEW posexplode(f.w2.curr_fragment.ensemble) AS bi, bookie   -- \E bookie \in writer.curr_fragment.ensemble
    WHERE f.w2.status = 'STATUS_IN_RECOVERY' AND f.meta_status = 'STATUS_IN_RECOVERY'
      -- NoPendingResends(writer)
      AND NOT exists(f.w2.pending_add_ops, op -> op.fragment_id != f.w2.curr_fragment.id
                                                 OR NOT (op.ensemble <=> f.w2.curr_fragment.ensemble))
      AND f.w2.meta_version = f.meta_version
),

timed_out AS (
    SELECT *,
        -- ValidEnsemble(e, writer.curr_fragment.ensemble \ {bookie}, {bookie}) over SUBSET Bookies, sorted:
        -- the first is SelectEnsemble's choice (see W1CreatesLedger.sql).
        sort_array(filter(
            transform(sequence(0, shiftleft(1, size(Bookies)) - 1),
                      mask -> filter(Bookies, (b, i) -> (shiftright(mask, i) & 1) = 1)),
            e -> size(e) = WriteQuorum
                 AND NOT array_contains(e, bookie)
                 AND size(array_except(array_remove(w2.curr_fragment.ensemble, bookie), e)) = 0
                 AND forall(meta_fragments, f -> NOT (f.ensemble <=> e)))) AS candidates,
        size(filter(messages, y -> y.count = -1 AND y.msg.bookie = bookie                   -- WriteTimeoutForBookie's
                                   AND y.msg.type IN ('AddEntryRequestMessage', 'AddEntryResponseMessage')
                                   AND y.msg.recovery = true)) AS timeouts                   --   witnesses
    FROM choices
    -- WriteTimeoutForBookie(messages, bookie, TRUE)
    WHERE exists(messages, y -> y.count = -1 AND y.msg.bookie = bookie
                                AND y.msg.type IN ('AddEntryRequestMessage', 'AddEntryResponseMessage')
                                AND y.msg.recovery = true)
),

enabled AS (
    SELECT *, candidates[0] AS new_ensemble, w2.lac + 1 AS first_entry_id
    FROM timed_out
    WHERE size(candidates) > 0                                                  -- EnsembleAvailable
      AND NOT exists(meta_fragments, f -> f.first_entry_id > w2.lac + 1)       -- ValidNextFragment(lac + 1)
),

updated AS (
    -- UpdatedFragments(writer, first_entry_id, new_ensemble)
    SELECT *,
        IF(first_entry_id = w2.curr_fragment.first_entry_id,
           transform(meta_fragments, f -> IF(f <=> element_at(meta_fragments, -1),
               named_struct('id', f.id, 'ensemble', new_ensemble, 'first_entry_id', f.first_entry_id), f)),
           array_append(meta_fragments, named_struct('id', size(meta_fragments) + 1, 'ensemble', new_ensemble,
                                                     'first_entry_id', first_entry_id))) AS fragments
    FROM enabled
),

final AS (
    SELECT
        meta_status,
        fragments                                   AS meta_fragments,
        meta_last_entry,
        meta_version + 1                            AS meta_version,
        b_entries, b_fenced, b_lac,
        w1,
        named_struct(
            'meta_version', meta_version + 1, 'status', w2.status, 'curr_fragment', element_at(fragments, -1),
            'pending_add_ops', w2.pending_add_ops, 'lap', w2.lap, 'lac', w2.lac,
            'confirmed', transform(w2.confirmed, (c, i) -> IF(i + 1 >= first_entry_id, array_remove(c, bookie), c)),
            'fenced', w2.fenced, 'curr_read_entry', w2.curr_read_entry, 'has_entry', w2.has_entry,
            'no_such_entry', w2.no_such_entry, 'recovery_phase', w2.recovery_phase) AS w2,
        -- ClearWriteTimeout(bookie, TRUE)
        transform(messages, y -> IF(y.msg.type IN ('AddEntryRequestMessage', 'AddEntryResponseMessage')
                                    AND y.msg.bookie = bookie AND y.msg.recovery = true AND y.count = -1,
                                    named_struct('msg', y.msg, 'count', 0), y)) AS messages,
        _parent, bi * 1024 + _copy AS _choice
    FROM updated LATERAL VIEW explode(sequence(0, timeouts * size(candidates) - 1)) AS _copy  -- a method of its own (README, Writing a model)
)

SELECT * FROM final
