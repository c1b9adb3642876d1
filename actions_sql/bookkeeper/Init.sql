-- BookKeeperProtocol.tla: Init
WITH final AS (
    SELECT
        CAST(array() AS ARRAY<STRUCT<msg: STRUCT<type:STRING, bookie:STRING, cid:STRING, entry:STRUCT<id:INT, data:INT>, lac:INT, recovery:BOOLEAN, success:BOOLEAN, entry_id:INT, fence:BOOLEAN, code:STRING>, count: INT>>) AS messages,
        'Nil' AS meta_status,
        CAST(array() AS ARRAY<STRUCT<id:INT, ensemble:ARRAY<STRING>, first_entry_id:INT>>) AS meta_fragments,
        0 AS meta_last_entry,
        0 AS meta_version,
        transform(Bookies, b -> CAST(array() AS ARRAY<STRUCT<id:INT, data:INT>>)) AS b_entries,
        transform(Bookies, b -> false) AS b_fenced,
        transform(Bookies, b -> 0) AS b_lac,
        transform(Clients, cid -> named_struct(                   -- InitClient(cid)
            'id', cid, 'meta_version', -1, 'status', 'Nil',
            'fragments', CAST(array() AS ARRAY<STRUCT<id:INT, ensemble:ARRAY<STRING>, first_entry_id:INT>>),
            'curr_fragment', CAST(NULL AS STRUCT<id:INT, ensemble:ARRAY<STRING>, first_entry_id:INT>),
            'pending_add_ops', CAST(array() AS ARRAY<STRUCT<entry:STRUCT<id:INT, data:INT>, fragment_id:INT, ensemble:ARRAY<STRING>>>),
            'lap', 0, 'lac', 0,
            'confirmed', transform(sequence(1, SendLimit), id -> CAST(array() AS ARRAY<STRING>)),
            'fenced', CAST(array() AS ARRAY<STRING>),
            'recovery_ensemble', CAST(array() AS ARRAY<STRING>),
            'curr_read_entry', -1,
            'read_responses', CAST(array() AS ARRAY<STRUCT<type:STRING, bookie:STRING, cid:STRING, entry:STRUCT<id:INT, data:INT>, lac:INT, recovery:BOOLEAN, success:BOOLEAN, entry_id:INT, fence:BOOLEAN, code:STRING>>),
            'recovery_phase', 0,
            'last_recoverable_entry', -1)) AS clients
)

SELECT * FROM final
