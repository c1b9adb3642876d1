-- CounterLive.tla: Reset == x = Max /\ x' = 0 /\ UNCHANGED visited
WITH final AS (
    SELECT 0 AS x, visited, _parent
    FROM frontier
    WHERE x = Max
)
SELECT * FROM final
