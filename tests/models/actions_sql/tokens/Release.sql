-- Tokens.tla: Release(p)
WITH choices AS (
    SELECT f.*, pr.pi, pr.p
    FROM frontier AS f
    LATERAL VIEW posexplode(Procs) pr AS pi, p
),
enabled AS (
    SELECT * FROM choices WHERE owner = p
),
final AS (
    SELECT cnt, 'none' AS owner, log, done, last, _parent, pi AS _choice
    FROM enabled
)
SELECT * FROM final
