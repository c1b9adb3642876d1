-- BookKeeperProtocol_v4_13.tla: W1SendsAddEntryRequests
-- w1 sends entry lap+1 to every bookie of its current ensemble; each request is delivered once or
-- lost (SendMessagesToEnsemble: one successor per choice of delivery counts).
WITH enabled AS (
    SELECT *, named_struct('id', w1.lap + 1, 'data', w1.lap + 1) AS entry
    FROM frontier
    WHERE w1.status = 'STATUS_OPEN' AND w1.lap + 1 <= SendLimit
),

requests AS (
    SELECT *,
        transform(w1.curr_fragment.ensemble, b -> CAST(named_struct(
            'type', 'AddEntryRequestMessage', 'bookie', b, 'entry', entry, 'lac', w1.lac, 'recovery', false,
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
        meta_status, meta_fragments, meta_last_entry, meta_version, b_entries, b_fenced, b_lac,
        named_struct(
            'meta_version', w1.meta_version, 'status', w1.status, 'curr_fragment', w1.curr_fragment,
            'pending_add_ops', sort_array(array_distinct(array_append(w1.pending_add_ops, named_struct(
                'entry', entry, 'fragment_id', w1.curr_fragment.id, 'ensemble', w1.curr_fragment.ensemble)))),
            'lap', entry.id, 'lac', w1.lac, 'confirmed', w1.confirmed,
            'fenced', w1.fenced, 'curr_read_entry', w1.curr_read_entry, 'has_entry', w1.has_entry,
            'no_such_entry', w1.no_such_entry, 'recovery_phase', w1.recovery_phase) AS w1,
        w2,
        sort_array(concat(messages, transform(reqs, (q, i) -> named_struct(
            'msg', q, 'count', IF((shiftright(mask, i) & 1) = 1, 1, -1))))) AS messages,
        _parent, mask AS _choice
    FROM sent
)

SELECT * FROM final
