-- BookKeeperProtocol_v4_13.tla: W2SendsReadRequests
-- Once every ack quorum of its ensemble has a fenced bookie (or after a successful read), w2 sends a
-- recovery read of entry lap+1 to the ensemble of that entry's fragment (each delivered or lost).
WITH enabled AS (
    SELECT *, w2.lap + 1 AS next_entry_id
    FROM frontier
    WHERE w2.status = 'STATUS_IN_RECOVERY'
      AND (w2.recovery_phase = 2                                               -- ReadPhase
           OR (w2.recovery_phase = 1                                           -- FencingPhase
               -- \A ack_quorum \in {s \in SUBSET ensemble : |s| = AckQuorum} : fenced \cap ack_quorum # {}
               -- holds exactly when fewer than AckQuorum bookies of the ensemble are unfenced
               -- (AckQuorum of them would form an ack quorum with no fenced bookie).
               AND size(array_except(w2.curr_fragment.ensemble, w2.fenced)) < AckQuorum))
),

not_sent AS (
    SELECT *,
        -- FragmentOfEntryId(next_entry_id)
        CASE WHEN size(meta_fragments) = 1 THEN meta_fragments[0]
             WHEN element_at(meta_fragments, -1).first_entry_id <= next_entry_id THEN element_at(meta_fragments, -1)
             ELSE element_at(filter(meta_fragments, f1 -> exists(meta_fragments, f2 ->
                      f1.id = f2.id - 1 AND f1.first_entry_id <= next_entry_id
                      AND f2.first_entry_id > next_entry_id)), 1)
        END AS read_fragment
    FROM enabled
    WHERE NOT exists(messages, y -> y.msg.type = 'ReadRequestMessage' AND y.msg.entry_id = next_entry_id)  -- NotSentRead
),

requests AS (
    SELECT *,
        transform(read_fragment.ensemble, b -> CAST(named_struct(
            'type', 'ReadRequestMessage', 'bookie', b, 'entry', NULL, 'lac', NULL, 'recovery', NULL,
            'success', NULL, 'entry_id', next_entry_id, 'fence', RecoveryReadsFence)
            AS struct<type:string, bookie:string, entry:struct<id:int, data:int>, lac:int, recovery:boolean,
                      success:boolean, entry_id:int, fence:boolean>)) AS reqs
    FROM not_sent
),

sent AS (
    SELECT r.*, mask
    FROM requests AS r
    LATERAL VIEW explode(sequence(0, shiftleft(1, size(r.reqs)) - 1)) AS mask   -- \E counts \in possible_del_counts
    WHERE NOT exists(r.reqs, q -> exists(r.messages, y -> y.msg <=> q))
),

final AS (
    SELECT
        meta_status, meta_fragments, meta_last_entry, meta_version, b_entries, b_fenced, b_lac, w1,
        named_struct(
            'meta_version', w2.meta_version, 'status', w2.status, 'curr_fragment', w2.curr_fragment,
            'pending_add_ops', w2.pending_add_ops, 'lap', w2.lap, 'lac', w2.lac, 'confirmed', w2.confirmed,
            'fenced', w2.fenced, 'curr_read_entry', w2.curr_read_entry, 'has_entry', w2.has_entry,
            'no_such_entry', w2.no_such_entry, 'recovery_phase', 3) AS w2,          -- PendingReadResponsePhase
        sort_array(concat(messages, transform(reqs, (q, i) -> named_struct(
            'msg', q, 'count', IF((shiftright(mask, i) & 1) = 1, 1, -1))))) AS messages,
        _parent, mask AS _choice
    FROM sent
)

SELECT * FROM final
