-- BookKeeperProtocol_v4_13.tla: W1CloseLedgerFail
-- w1's close fails: the ledger is no longer open and its metadata version moved on (w1's becomes Nil).
WITH enabled AS (
    SELECT * FROM frontier
    WHERE NOT (w1.meta_version <=> meta_version)          -- Nil # n holds, as in TLC
      AND w1.status = 'STATUS_OPEN' AND meta_status != 'STATUS_OPEN'
),

final AS (
    SELECT
        meta_status, meta_fragments, meta_last_entry, meta_version, b_entries, b_fenced, b_lac,
        named_struct(
            'meta_version', CAST(NULL AS INT), 'status', w1.status, 'curr_fragment', w1.curr_fragment,
            'pending_add_ops', w1.pending_add_ops, 'lap', w1.lap, 'lac', w1.lac, 'confirmed', w1.confirmed,
            'fenced', w1.fenced, 'curr_read_entry', w1.curr_read_entry, 'has_entry', w1.has_entry,
            'no_such_entry', w1.no_such_entry, 'recovery_phase', w1.recovery_phase) AS w1,
        w2, messages, _parent
    FROM enabled
)

SELECT * FROM final
