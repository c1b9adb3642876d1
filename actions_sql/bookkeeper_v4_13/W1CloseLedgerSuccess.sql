-- BookKeeperProtocol_v4_13.tla: W1CloseLedgerSuccess
-- w1 closes the still-open ledger at its lac (a close can happen at any time).
WITH enabled AS (
    SELECT * FROM frontier
    WHERE w1.meta_version = meta_version AND w1.status = 'STATUS_OPEN' AND meta_status = 'STATUS_OPEN'
),

final AS (
    SELECT
        'STATUS_CLOSED'                             AS meta_status,
        meta_fragments,
        w1.lac                                      AS meta_last_entry,
        meta_version + 1                            AS meta_version,
        b_entries, b_fenced, b_lac,
        named_struct(
            'meta_version', w1.meta_version + 1, 'status', 'STATUS_CLOSED', 'curr_fragment', w1.curr_fragment,
            'pending_add_ops', w1.pending_add_ops, 'lap', w1.lap, 'lac', w1.lac, 'confirmed', w1.confirmed,
            'fenced', w1.fenced, 'curr_read_entry', w1.curr_read_entry, 'has_entry', w1.has_entry,
            'no_such_entry', w1.no_such_entry, 'recovery_phase', w1.recovery_phase) AS w1,
        w2, messages, _parent
    FROM enabled
)

SELECT * FROM final
