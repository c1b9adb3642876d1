-- BookKeeperProtocol_v4_13.tla: W2WritesBackEntry
-- In the write phase w2 sends its earliest not-yet-sent pending op as recovery adds to its current
-- ensemble (each delivered or lost).
WITH choices AS (
    SELECT f.*, oi, op
    FROM frontier AS f
    LATERAL VIEW posexplode(f.w2.pending_add_ops) AS oi, op                  -- \E op \in w2.pending_add_ops
    WHERE f.w2.status = 'STATUS_IN_RECOVERY' AND f.w2.recovery_phase = 4     -- WritePhase
),

enabled AS (
    SELECT * FROM choices
    -- NotSentWrite(op)
    WHERE NOT exists(messages, y -> y.msg.type = 'AddEntryRequestMessage' AND y.msg.recovery = true
                                    AND y.msg.entry <=> op.entry)
      AND NOT exists(w2.pending_add_ops, o2 ->
              NOT exists(messages, z -> z.msg.type = 'AddEntryRequestMessage' AND z.msg.recovery = true
                                        AND z.msg.entry <=> o2.entry)
              AND o2.entry.id < op.entry.id)
),

requests AS (
    SELECT *,
        transform(w2.curr_fragment.ensemble, b -> CAST(named_struct(
            'type', 'AddEntryRequestMessage', 'bookie', b, 'entry', op.entry, 'lac', w2.lac, 'recovery', true,
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
        meta_status, meta_fragments, meta_last_entry, meta_version, b_entries, b_fenced, b_lac, w1, w2,
        sort_array(concat(messages, transform(reqs, (q, i) -> named_struct(
            'msg', q, 'count', IF((shiftright(mask, i) & 1) = 1, 1, -1))))) AS messages,
        _parent, oi * 1024 + mask AS _choice
    FROM sent
)

SELECT * FROM final
