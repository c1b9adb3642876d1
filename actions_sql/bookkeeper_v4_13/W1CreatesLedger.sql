-- BookKeeperProtocol_v4_13.tla: W1CreatesLedger
-- w1 creates the ledger with fragment 1 on SelectEnsemble({}, {}).
WITH enabled AS (
    SELECT * FROM frontier
    WHERE meta_status = 'Nil' AND w1.meta_version IS NULL
),

ensembles AS (
    -- SelectEnsemble({}, {}) == CHOOSE ensemble \in SUBSET Bookies : ValidEnsemble(ensemble, {}, {}):
    -- the valid subsets (from bit masks over Bookies), the first in lexicographic order of the sorted
    -- bookies. Every candidate has WriteQuorum members; for up to three bookies this is also the
    -- subset TLC's enumeration of SUBSET meets first.
    SELECT *,
        sort_array(filter(
            transform(sequence(0, shiftleft(1, size(Bookies)) - 1),
                      mask -> filter(Bookies, (b, i) -> (shiftright(mask, i) & 1) = 1)),
            e -> size(e) = WriteQuorum
                 AND forall(meta_fragments, f -> NOT (f.ensemble <=> e)))) AS candidates
    FROM enabled
),

chosen AS (
    SELECT *,
        named_struct('id', 1,
                     'ensemble', CASE WHEN size(candidates) = 0
                                      THEN raise_error('W1CreatesLedger: no ensemble of WriteQuorum bookies (CHOOSE fails)')
                                      ELSE candidates[0] END,
                     'first_entry_id', 1) AS fragment
    FROM ensembles
),

final AS (
    SELECT
        'STATUS_OPEN'                               AS meta_status,
        array_append(meta_fragments, fragment)      AS meta_fragments,
        meta_last_entry,
        1                                           AS meta_version,
        b_entries, b_fenced, b_lac,
        named_struct(
            'meta_version', 1, 'status', 'STATUS_OPEN', 'curr_fragment', fragment,
            'pending_add_ops', w1.pending_add_ops, 'lap', w1.lap, 'lac', w1.lac, 'confirmed', w1.confirmed,
            'fenced', w1.fenced, 'curr_read_entry', w1.curr_read_entry, 'has_entry', w1.has_entry,
            'no_such_entry', w1.no_such_entry, 'recovery_phase', w1.recovery_phase) AS w1,
        w2, messages, _parent
    FROM chosen
)

SELECT * FROM final
