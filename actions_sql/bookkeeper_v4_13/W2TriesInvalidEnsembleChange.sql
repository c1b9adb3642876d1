-- BookKeeperProtocol_v4_13.tla: W2TriesInvalidEnsembleChange (InvalidEnsembleChange(w2, TRUE))
-- As W2ChangesEnsemble, but a fragment already starts after lac+1: w2 becomes STATUS_INVALID.
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

counted AS (
    SELECT *,
        -- WriteTimeoutForBookie(messages, bookie, TRUE): its witnesses
        size(filter(messages, y -> y.count = -1 AND y.msg.bookie = bookie
                                   AND y.msg.type IN ('AddEntryRequestMessage', 'AddEntryResponseMessage')
                                   AND y.msg.recovery = true)) AS timeouts,
        -- EnsembleAvailable(writer.curr_fragment.ensemble \ {bookie}, {bookie}): its witnesses
        size(filter(transform(sequence(0, shiftleft(1, size(Bookies)) - 1),
                              mask -> filter(Bookies, (b, i) -> (shiftright(mask, i) & 1) = 1)),
                    e -> size(e) = WriteQuorum
                         AND NOT array_contains(e, bookie)
                         AND size(array_except(array_remove(w2.curr_fragment.ensemble, bookie), e)) = 0
                         AND forall(meta_fragments, f -> NOT (f.ensemble <=> e)))) AS ensembles
    FROM choices
),

enabled AS (
    SELECT * FROM counted
    WHERE timeouts > 0 AND ensembles > 0
      AND exists(meta_fragments, f -> f.first_entry_id > w2.lac + 1)          -- ~ValidNextFragment(lac + 1)
),

final AS (
    SELECT
        meta_status, meta_fragments, meta_last_entry, meta_version, b_entries, b_fenced, b_lac,
        w1,
        named_struct(
            'meta_version', w2.meta_version, 'status', 'STATUS_INVALID', 'curr_fragment', w2.curr_fragment,
            'pending_add_ops', w2.pending_add_ops, 'lap', w2.lap, 'lac', w2.lac, 'confirmed', w2.confirmed,
            'fenced', w2.fenced, 'curr_read_entry', w2.curr_read_entry, 'has_entry', w2.has_entry,
            'no_such_entry', w2.no_such_entry, 'recovery_phase', w2.recovery_phase) AS w2,
        messages, _parent, bi * 1024 + _copy AS _choice
    FROM enabled LATERAL VIEW explode(sequence(0, timeouts * ensembles - 1)) AS _copy
)

SELECT * FROM final
