-- BookKeeperProtocol.tla: ClientReceivesRecoveryReadResponse(cid), with ReadStatus, ReadPositive,
-- ReadNegative, ReadUnknown, NotEnoughReadResponses and IgnoreFurtherReadResponses
WITH choices AS (
    SELECT f.*, cl.ci, cl.cid, f.clients[cl.ci] AS c
    FROM frontier AS f
    LATERAL VIEW posexplode(system.session.Clients) cl AS ci, cid       -- \E cid \in Clients
),

msgs AS (
    SELECT f.*, mm.mi, mm.m.msg AS msg, mm.m.count AS cnt
    FROM choices AS f
    LATERAL VIEW posexplode(filter(f.messages, m -> m.msg.type = 'ReadResponseMessage' AND m.count >= 1 AND m.msg.cid = cid)) mm AS mi, m  -- \E msg \in DOMAIN messages (the deliverable ones of its type)
),
pre AS (
    SELECT *, sort_array(array_distinct(array_append(c.read_responses, msg))) AS responses
    FROM msgs
    WHERE c.status = 'STATUS_IN_RECOVERY' AND c.recovery_phase = 2
      AND msg.cid = cid AND msg.type = 'ReadResponseMessage' AND cnt >= 1
      AND msg.entry.id = c.curr_read_entry
),
with_status AS (
    SELECT *,
        CASE WHEN exists(responses, r -> r.code = 'OK') THEN 'OK'
             WHEN size(filter(responses, r -> r.code = 'NoSuchEntry')) >= WriteQuorum - AckQuorum + 1
             THEN 'NoSuchEntry'
             -- ReadTimeoutCount(c.id, c.recovery_ensemble, TRUE)
             WHEN size(responses) + size(filter(c.recovery_ensemble, b -> exists(messages, m ->
                      m.count = -1 AND m.msg.bookie = b AND m.msg.cid = c.id
                      AND m.msg.type IN ('ReadRequestMessage', 'ReadResponseMessage')))) = WriteQuorum
             THEN 'Unknown'
             ELSE 'NeedMoreResponses' END AS read_status
    FROM pre
),
enabled AS (
    SELECT *, ci * 256 + mi AS _choice
    FROM with_status
    -- A decided read sets messages' by IgnoreFurtherReadResponses and again by MessageProcessed:
    -- the conjunction holds only when both agree, i.e. no other read message of this client to the
    -- recovery ensemble is still deliverable (count 1).
    WHERE read_status = 'NeedMoreResponses'
       OR NOT exists(messages, m -> NOT (m.msg <=> msg) AND array_contains(c.recovery_ensemble, m.msg.bookie)
                                    AND m.msg.cid = msg.cid
                                    AND m.msg.type IN ('ReadRequestMessage', 'ReadResponseMessage')
                                    AND m.count = 1)
),

final AS (
    SELECT
        transform(messages, m -> IF(m.msg <=> msg, named_struct('msg', m.msg, 'count', m.count - 1), m)) AS messages,
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
                'status', IF(read_status = 'Unknown', 'RECOVERY_ABORTED', x.status),
                'fragments', x.fragments,
                'curr_fragment', x.curr_fragment,
                'pending_add_ops', IF(read_status = 'OK', sort_array(array_distinct(array_append(x.pending_add_ops, named_struct('entry', named_struct('id', x.lap + 1, 'data', msg.entry.data), 'fragment_id', x.curr_fragment.id, 'ensemble', x.curr_fragment.ensemble)))), x.pending_add_ops),
                'lap', IF(read_status = 'OK', x.lap + 1, x.lap),
                'lac', x.lac,
                'confirmed', x.confirmed,
                'fenced', x.fenced,
                'recovery_ensemble', IF(read_status IN ('NoSuchEntry', 'Unknown'), CAST(array() AS ARRAY<STRING>), x.recovery_ensemble),
                'curr_read_entry', IF(read_status = 'NeedMoreResponses', x.curr_read_entry, -1),
                'read_responses', IF(read_status = 'NeedMoreResponses', responses, CAST(array() AS ARRAY<STRUCT<type:STRING, bookie:STRING, cid:STRING, entry:STRUCT<id:INT, data:INT>, lac:INT, recovery:BOOLEAN, success:BOOLEAN, entry_id:INT, fence:BOOLEAN, code:STRING>>)),
                'recovery_phase', x.recovery_phase,
                'last_recoverable_entry', IF(read_status = 'NoSuchEntry', msg.entry.id - 1, x.last_recoverable_entry)), x)) AS clients,
        _parent, _choice
    FROM enabled
)

SELECT * FROM final
