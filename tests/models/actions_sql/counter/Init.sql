-- Counter.tla: Init
WITH final AS (
    SELECT 0 AS x, array(0) AS visited
)
SELECT * FROM final
