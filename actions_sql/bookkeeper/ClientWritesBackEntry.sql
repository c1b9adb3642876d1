-- BookKeeperProtocol.tla: ClientWritesBackEntry(cid), with NotSentWrite(c, op)
-- The recovery client writes back the lowest recovered entry not yet sent.
WITH choices AS (
    SELECT f.*, cl.ci, cl.cid, f.clients[cl.ci] AS c
    FROM frontier AS f
    LATERAL VIEW posexplode(system.session.Clients) cl AS ci, cid       -- \E cid \in Clients
),

ops AS (
    SELECT ch.*, o.oi, o.op
    FROM choices AS ch
    LATERAL VIEW posexplode(ch.c.pending_add_ops) o AS oi, op          -- \E op \in c.pending_add_ops
    WHERE ch.c.status = 'STATUS_IN_RECOVERY' AND ch.c.recovery_phase = 2
),
unsent AS (
    SELECT *,
        filter(c.pending_add_ops, o -> NOT exists(messages, m -> m.msg.type = 'AddEntryRequestMessage'
               AND m.msg.cid = c.id AND m.msg.recovery = true AND m.msg.entry <=> o.entry)) AS not_sent
    FROM ops
),
pre AS (
    SELECT * FROM unsent
    WHERE array_contains(not_sent, op) AND NOT exists(not_sent, o2 -> o2.entry.id < op.entry.id)
),
to_send AS (
    SELECT *, transform(c.curr_fragment.ensemble, b -> named_struct('type', 'AddEntryRequestMessage', 'bookie', b, 'cid', c.id, 'entry', op.entry, 'lac', c.lac, 'recovery', true, 'success', CAST(NULL AS BOOLEAN), 'entry_id', CAST(NULL AS INT), 'fence', CAST(NULL AS BOOLEAN), 'code', CAST(NULL AS STRING))) AS new_msgs
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
        (ci * 16 + oi) * 64 + mask AS _choice
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
        clients,
        _parent, _choice
    FROM enabled
)

SELECT * FROM final
