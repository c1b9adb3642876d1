-- Counter.tla: Step(s) for \E s \in Steps
WITH choices AS (
    SELECT f.*, st.si, st.s
    FROM frontier AS f
    LATERAL VIEW posexplode(Steps) st AS si, s
),
enabled AS (
    SELECT * FROM choices WHERE x + s <= Max
),
final AS (
    SELECT x + s AS x, array_sort(array_distinct(array_append(visited, x + s))) AS visited,
           _parent, si AS _choice
    FROM enabled
)
SELECT * FROM final
