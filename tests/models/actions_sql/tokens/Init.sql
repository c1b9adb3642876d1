-- Tokens.tla: Init
WITH final AS (
    SELECT array_repeat(0, size(Procs)) AS cnt, 'none' AS owner, CAST(array() AS array<string>) AS log,
           CAST(array() AS array<string>) AS done, CAST(NULL AS struct<who:string, n:int>) AS last
)
SELECT * FROM final
