-- BookKeeperProtocol_v4_13.tla: W1SendsPendingAddOp (SendPendingAddOp(w1, FALSE))
-- After an ensemble change, w1 sends its earliest not-yet-moved pending add op to the bookies new in
-- its ensemble (each request delivered once or lost) and moves the op to the current fragment.
-- Which op needs moving is a disjunction (a new fragment id, or a new ensemble) before any primed
-- variable: TLC takes each true disjunct as a step of its own, so an op behind an appended fragment
-- (both differ) is sent twice, the same successors both times (docs/generated-counts.md).
WITH choices AS (
    SELECT f.*, oi, op, d
    FROM frontier AS f
    LATERAL VIEW posexplode(f.w1.pending_add_ops) AS oi, op              -- \E op \in writer.pending_add_ops
    LATERAL VIEW explode(array(0, 1)) AS d                                --   \/ disjunct 0 \/ disjunct 1
    WHERE f.w1.status = 'STATUS_OPEN'
      AND IF(d = 0, op.fragment_id != f.w1.curr_fragment.id,               -- op.fragment_id # writer.curr_fragment.id
                    NOT (op.ensemble <=> f.w1.curr_fragment.ensemble))    -- op.ensemble # writer.curr_fragment.ensemble
      AND NOT exists(f.w1.pending_add_ops, o2 -> o2.fragment_id = op.fragment_id
                                                 AND o2.ensemble <=> op.ensemble
                                                 AND o2.entry.id < op.entry.id)
),

requests AS (
    SELECT *,
        -- GetAddEntryRequests(writer, op.entry, writer.curr_fragment.ensemble \ op.ensemble, FALSE)
        transform(array_except(w1.curr_fragment.ensemble, op.ensemble), b -> CAST(named_struct(
            'type', 'AddEntryRequestMessage', 'bookie', b, 'entry', op.entry, 'lac', w1.lac, 'recovery', false,
            'success', NULL, 'entry_id', NULL, 'fence', NULL)
            AS struct<type:string, bookie:string, entry:struct<id:int, data:int>, lac:int, recovery:boolean,
                      success:boolean, entry_id:int, fence:boolean>)) AS reqs
    FROM choices
),

sent AS (
    SELECT r.*, mask
    FROM requests AS r
    LATERAL VIEW explode(sequence(0, shiftleft(1, size(r.reqs)) - 1)) AS mask   -- \E counts \in possible_del_counts
    WHERE NOT exists(r.reqs, q -> exists(r.messages, y -> y.msg <=> q))
),

final AS (
    SELECT
        meta_status, meta_fragments, meta_last_entry, meta_version, b_entries, b_fenced, b_lac,
        named_struct(
            'meta_version', w1.meta_version, 'status', w1.status, 'curr_fragment', w1.curr_fragment,
            -- SetNewEnsemble(writer, op)
            'pending_add_ops', sort_array(array_distinct(transform(w1.pending_add_ops, o -> IF(o <=> op,
                named_struct('entry', o.entry, 'fragment_id', w1.curr_fragment.id,
                             'ensemble', w1.curr_fragment.ensemble), o)))),
            'lap', w1.lap, 'lac', w1.lac, 'confirmed', w1.confirmed,
            'fenced', w1.fenced, 'curr_read_entry', w1.curr_read_entry, 'has_entry', w1.has_entry,
            'no_such_entry', w1.no_such_entry, 'recovery_phase', w1.recovery_phase) AS w1,
        w2,
        sort_array(concat(messages, transform(reqs, (q, i) -> named_struct(
            'msg', q, 'count', IF((shiftright(mask, i) & 1) = 1, 1, -1))))) AS messages,
        _parent, (oi * 2 + d) * 1024 + mask AS _choice
    FROM sent
)

SELECT * FROM final
