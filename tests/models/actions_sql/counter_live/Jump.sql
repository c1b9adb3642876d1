-- CounterLive.tla: Jump == JumpFrom <= x /\ x < Max /\ x' = Max /\ visited' = visited \cup {Max}
WITH final AS (
    SELECT Max AS x, array_sort(array_distinct(array_append(visited, Max))) AS visited, _parent
    FROM frontier
    WHERE JumpFrom <= x AND x < Max
)
SELECT * FROM final
