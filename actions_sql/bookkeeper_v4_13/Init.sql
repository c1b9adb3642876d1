-- BookKeeperProtocol_v4_13.tla: Init
-- No ledger, no messages, both clients empty (InitWriter).
WITH writer AS (
    SELECT named_struct(
        'meta_version', CAST(NULL AS INT),
        'status', 'Nil',
        'curr_fragment', CAST(NULL AS struct<id:int, ensemble:array<string>, first_entry_id:int>),
        'pending_add_ops', CAST(array() AS array<struct<entry:struct<id:int, data:int>, fragment_id:int, ensemble:array<string>>>),
        'lap', 0,
        'lac', 0,
        'confirmed', transform(sequence(1, SendLimit), id -> CAST(array() AS array<string>)),  -- [id \in EntryIds |-> {}]
        'fenced', CAST(array() AS array<string>),
        'curr_read_entry', CAST(NULL AS struct<id:int, data:int>),
        'has_entry', CAST(array() AS array<string>),
        'no_such_entry', CAST(array() AS array<string>),
        'recovery_phase', 0
    ) AS w
),

final AS (
    SELECT
        'Nil'                                       AS meta_status,
        array()                                     AS meta_fragments,
        0                                           AS meta_last_entry,
        0                                           AS meta_version,
        transform(Bookies, b -> array())            AS b_entries,
        transform(Bookies, b -> false)              AS b_fenced,
        transform(Bookies, b -> 0)                  AS b_lac,
        w                                           AS w1,
        w                                           AS w2,
        array()                                     AS messages
    FROM writer
)

SELECT * FROM final
