-- BookKeeperProtocol_v4_13.tla: W2ClosesLedger
-- Every recovered entry is written back: w2 closes the ledger at its lac.
WITH enabled AS (
    SELECT * FROM frontier
    WHERE meta_version = w2.meta_version AND meta_status = 'STATUS_IN_RECOVERY'
      AND w2.status = 'STATUS_IN_RECOVERY' AND w2.recovery_phase = 4        -- WritePhase
      AND size(w2.pending_add_ops) = 0
),

final AS (
    SELECT
        'STATUS_CLOSED'                             AS meta_status,
        meta_fragments,
        w2.lac                                      AS meta_last_entry,
        meta_version + 1                            AS meta_version,
        b_entries, b_fenced, b_lac, w1,
        named_struct(
            'meta_version', w2.meta_version + 1, 'status', 'STATUS_CLOSED', 'curr_fragment', w2.curr_fragment,
            'pending_add_ops', w2.pending_add_ops, 'lap', w2.lap, 'lac', w2.lac, 'confirmed', w2.confirmed,
            'fenced', w2.fenced, 'curr_read_entry', w2.curr_read_entry, 'has_entry', w2.has_entry,
            'no_such_entry', w2.no_such_entry, 'recovery_phase', w2.recovery_phase) AS w2,
        messages, _parent
    FROM enabled
)

SELECT * FROM final
