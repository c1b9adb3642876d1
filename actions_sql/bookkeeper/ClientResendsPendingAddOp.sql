-- BookKeeperProtocol.tla: ClientResendsPendingAddOp(cid), with ResendPendingAddOp(c, FALSE)
-- After an ensemble change, the lowest pending add op goes to the ensemble's new bookies.
-- NeedsResend(op, c.curr_fragment) is a disjunction (a new fragment id, or a new ensemble) that
-- TLC walks before any primed variable, taking each true disjunct as a step of its own: an op
-- behind an appended fragment (both differ) is resent twice, the same successors both times
-- (docs/generated-counts.md).
WITH choices AS (
    SELECT f.*, cl.ci, cl.cid, f.clients[cl.ci] AS c
    FROM frontier AS f
    LATERAL VIEW posexplode(system.session.Clients) cl AS ci, cid       -- \E cid \in Clients
),

ops AS (
    SELECT ch.*, o.oi, o.op, dj.d
    FROM choices AS ch
    LATERAL VIEW posexplode(ch.c.pending_add_ops) o AS oi, op          -- \E op \in c.pending_add_ops
    LATERAL VIEW explode(array(0, 1)) dj AS d                          --   NeedsResend: \/ disjunct 0 \/ disjunct 1
    WHERE ch.c.status = 'STATUS_OPEN'
),
pre AS (
    SELECT *, array_except(c.curr_fragment.ensemble, op.ensemble) AS new_bookies
    FROM ops
    WHERE IF(d = 0, op.fragment_id <> c.curr_fragment.id,               -- op.fragment_id # curr_fragment.id
                    NOT (op.ensemble <=> c.curr_fragment.ensemble))     -- op.ensemble # curr_fragment.ensemble
      AND NOT exists(c.pending_add_ops, op2 -> op2.fragment_id = op.fragment_id
                                              AND op2.ensemble <=> op.ensemble
                                              AND op2.entry.id < op.entry.id)
),
to_send AS (
    SELECT *, transform(new_bookies, b -> named_struct('type', 'AddEntryRequestMessage', 'bookie', b, 'cid', c.id, 'entry', op.entry, 'lac', c.lac, 'recovery', false, 'success', CAST(NULL AS BOOLEAN), 'entry_id', CAST(NULL AS INT), 'fence', CAST(NULL AS BOOLEAN), 'code', CAST(NULL AS STRING))) AS new_msgs
    FROM pre
),
sends AS (
    SELECT t.*, s.mask
    FROM to_send AS t
    LATERAL VIEW explode(sequence(0, shiftleft(1, size(t.new_msgs)) - 1)) s AS mask
    WHERE NOT exists(t.new_msgs, n -> exists(t.messages, m -> m.msg <=> n))
),
enabled AS (
    SELECT *,
        sort_array(concat(messages, transform(new_msgs, (n, k) ->
            named_struct('msg', n, 'count', IF((shiftright(mask, k) & 1) = 1, -1, 1))))) AS messages2,
        ((ci * 16 + oi) * 2 + d) * 64 + mask AS _choice
    FROM sends
),

final AS (
    SELECT
        messages2 AS messages,
        meta_status,
        meta_fragments,
        meta_last_entry,
        meta_version,
        b_entries,
        b_fenced,
        b_lac,
        transform(clients, (x, i) -> IF(i = ci, named_struct(
                'id', x.id,
                'meta_version', x.meta_version,
                'status', x.status,
                'fragments', x.fragments,
                'curr_fragment', x.curr_fragment,
                'pending_add_ops', sort_array(array_distinct(transform(x.pending_add_ops, o -> IF(o <=> op, named_struct('entry', o.entry, 'fragment_id', x.curr_fragment.id, 'ensemble', x.curr_fragment.ensemble), o)))),
                'lap', x.lap,
                'lac', x.lac,
                'confirmed', x.confirmed,
                'fenced', x.fenced,
                'recovery_ensemble', x.recovery_ensemble,
                'curr_read_entry', x.curr_read_entry,
                'read_responses', x.read_responses,
                'recovery_phase', x.recovery_phase,
                'last_recoverable_entry', x.last_recoverable_entry), x)) AS clients,
        _parent, _choice
    FROM enabled
)

SELECT * FROM final
