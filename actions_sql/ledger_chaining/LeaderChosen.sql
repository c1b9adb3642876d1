-- LedgerChaining.tla: LeaderChosen(c)
-- The metadata store elects c; how and why is not modelled.
WITH choices AS (
    SELECT f.*, cl.ci, cl.c
    FROM frontier AS f
    LATERAL VIEW posexplode(Clients) cl AS ci, c          -- \E c \in Clients
),

enabled AS (
    SELECT * FROM choices
    WHERE md_leader <> c
),

final AS (
    SELECT
        c_state, md_llist, md_llist_version, md_ledgers,
        c AS md_leader,
        md_next_lid, b_ledgers, next_entry_id,
        _parent, ci AS _choice
    FROM enabled
)

SELECT * FROM final
