-- BookKeeperProtocol_v4_13.tla: W2PlaceInRecovery
-- w2 puts the open ledger in recovery and sends a fencing read-lac request to every bookie of the
-- current fragment (each delivered once or lost).
WITH enabled AS (
    SELECT *, element_at(meta_fragments, -1) AS current_fragment        -- CurrentFragment
    FROM frontier
    WHERE w2.status = 'Nil' AND meta_status = 'STATUS_OPEN'
),

requests AS (
    SELECT *,
        transform(current_fragment.ensemble, b -> CAST(named_struct(
            'type', 'FenceRequestMessage', 'bookie', b, 'entry', NULL, 'lac', NULL, 'recovery', NULL,
            'success', NULL, 'entry_id', NULL, 'fence', NULL)
            AS struct<type:string, bookie:string, entry:struct<id:int, data:int>, lac:int, recovery:boolean,
                      success:boolean, entry_id:int, fence:boolean>)) AS reqs
    FROM enabled
),

sent AS (
    SELECT r.*, mask
    FROM requests AS r
    LATERAL VIEW explode(sequence(0, shiftleft(1, size(r.reqs)) - 1)) AS mask   -- \E counts \in possible_del_counts
    WHERE NOT exists(r.reqs, q -> exists(r.messages, y -> y.msg <=> q))
),

final AS (
    SELECT
        'STATUS_IN_RECOVERY'                        AS meta_status,
        meta_fragments, meta_last_entry,
        meta_version + 1                            AS meta_version,
        b_entries, b_fenced, b_lac, w1,
        named_struct(
            'meta_version', meta_version + 1, 'status', 'STATUS_IN_RECOVERY', 'curr_fragment', current_fragment,
            'pending_add_ops', w2.pending_add_ops, 'lap', w2.lap, 'lac', w2.lac, 'confirmed', w2.confirmed,
            'fenced', w2.fenced, 'curr_read_entry', w2.curr_read_entry, 'has_entry', w2.has_entry,
            'no_such_entry', w2.no_such_entry, 'recovery_phase', 1) AS w2,          -- FencingPhase
        sort_array(concat(messages, transform(reqs, (q, i) -> named_struct(
            'msg', q, 'count', IF((shiftright(mask, i) & 1) = 1, 1, -1))))) AS messages,
        _parent, mask AS _choice
    FROM sent
)

SELECT * FROM final
