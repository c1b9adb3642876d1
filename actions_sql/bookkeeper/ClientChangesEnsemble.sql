-- BookKeeperProtocol.tla: ClientChangesEnsemble(cid), with ChangeEnsemble(c, FALSE)
-- Bookies whose writes timed out are replaced by a new ensemble for the entries after the LAC.
-- TLC walks WriteTimeoutForBookie (an \E over the messages, under \A bookie \in failed_bookies) and
-- EnsembleAvailable (an \E over SUBSET Bookies) before any primed variable, so the step is generated
-- once for each lost add message of each failed bookie times each valid ensemble, the same successor
-- each time (docs/generated-counts.md): `copies` rows.
WITH choices AS (
    SELECT f.*, cl.ci, cl.cid, f.clients[cl.ci] AS c
    FROM frontier AS f
    LATERAL VIEW posexplode(system.session.Clients) cl AS ci, cid       -- \E cid \in Clients
),

pre AS (
    -- every bookie of the ensemble either timed out (failed) or did not (good): the only
    -- subset failed_bookies that can satisfy the spec's \E is the set of timed-out ones
    SELECT *,
        filter(c.curr_fragment.ensemble, b -> exists(messages, m -> m.count = -1 AND m.msg.bookie = b AND m.msg.cid = c.id AND m.msg.type IN ('AddEntryRequestMessage', 'AddEntryResponseMessage') AND m.msg.recovery = false)) AS failed,
        filter(c.curr_fragment.ensemble, b -> NOT exists(messages, m -> m.count = -1 AND m.msg.bookie = b AND m.msg.cid = c.id AND m.msg.type IN ('AddEntryRequestMessage', 'AddEntryResponseMessage') AND m.msg.recovery = false)) AS good,
        -- \A bookie \in failed_bookies : WriteTimeoutForBookie(...): the witnesses, bookie by bookie
        aggregate(c.curr_fragment.ensemble, 1, (n, b) -> n * greatest(1, size(filter(messages, m -> m.count = -1 AND m.msg.bookie = b AND m.msg.cid = c.id AND m.msg.type IN ('AddEntryRequestMessage', 'AddEntryResponseMessage') AND m.msg.recovery = false)))) AS timeouts,
        c.lac + 1 AS first_entry_id
    FROM choices LATERAL VIEW explode(array(0)) AS _split0   -- one row: a method of its own (README, Writing a model)
    WHERE c.status = 'STATUS_OPEN' AND meta_status = 'STATUS_OPEN'
      -- NoPendingResends(c)
      AND NOT exists(c.pending_add_ops, op -> op.fragment_id <> c.curr_fragment.id
                                             OR NOT (op.ensemble <=> c.curr_fragment.ensemble))
      AND c.meta_version = meta_version
),
with_ens AS (
    SELECT *, array_min(candidates) AS new_ensemble, timeouts * size(candidates) AS copies
    FROM (
        SELECT *, filter(                                                   -- the ensembles EnsembleAvailable finds
                transform(sequence(0, shiftleft(1, size(Bookies)) - 1),
                          mask -> filter(Bookies, (b, k) -> (shiftright(mask, k) & 1) = 1)),
                ens -> size(ens) = WriteQuorum
                   AND NOT exists(ens, b -> array_contains(failed, b))
                   AND forall(good, b -> array_contains(ens, b))
                   AND forall(meta_fragments, fr -> NOT (fr.ensemble <=> ens))) AS candidates
        FROM pre LATERAL VIEW explode(array(0)) AS _split1   -- one row: a method of its own (README, Writing a model)
        WHERE size(failed) > 0
    )
),
enabled AS (
    SELECT *,
        -- UpdatedFragments(c, first_entry_id, new_ensemble)
        IF(first_entry_id = c.curr_fragment.first_entry_id,
           transform(c.fragments, fr -> IF(fr <=> element_at(c.fragments, -1),
                     named_struct('id', fr.id, 'ensemble', new_ensemble, 'first_entry_id', fr.first_entry_id), fr)),
           array_append(c.fragments, named_struct('id', size(c.fragments) + 1, 'ensemble', new_ensemble,
                                                  'first_entry_id', first_entry_id))) AS updated
    FROM with_ens
    WHERE new_ensemble IS NOT NULL                                      -- EnsembleAvailable
),

final AS (
    SELECT
        transform(messages, m -> IF(            -- ClearWriteTimeout(c.id, failed, recovery)
            m.msg.type IN ('AddEntryRequestMessage', 'AddEntryResponseMessage')
            AND array_contains(failed, m.msg.bookie) AND m.msg.cid = c.id
            AND m.msg.recovery = false AND m.count = -1,
            named_struct('msg', m.msg, 'count', 0), m)) AS messages,
        meta_status,
        updated AS meta_fragments,
        meta_last_entry,
        meta_version + 1 AS meta_version,
        b_entries,
        b_fenced,
        b_lac,
        transform(clients, (x, i) -> IF(i = ci, named_struct(
                'id', x.id,
                'meta_version', meta_version + 1,
                'status', x.status,
                'fragments', updated,
                'curr_fragment', element_at(updated, -1),
                'pending_add_ops', x.pending_add_ops,
                'lap', x.lap,
                'lac', x.lac,
                'confirmed', transform(x.confirmed, (s, k) -> IF(k + 1 >= first_entry_id, array_except(s, failed), s)),
                'fenced', x.fenced,
                'recovery_ensemble', x.recovery_ensemble,
                'curr_read_entry', x.curr_read_entry,
                'read_responses', x.read_responses,
                'recovery_phase', x.recovery_phase,
                'last_recoverable_entry', x.last_recoverable_entry), x)) AS clients,
        _parent, ci * 1024 + _copy AS _choice
    FROM enabled LATERAL VIEW explode(sequence(0, copies - 1)) AS _copy   -- a method of its own (README, Writing a model)
)

SELECT * FROM final
