-- Tokens.tla: Release(p)
WITH choices AS (
    SELECT f.*, pr.pi, pr.p
    FROM frontier AS f
    CROSS JOIN (SELECT posexplode(Procs) AS (pi, p)) AS pr
),
enabled AS (
    SELECT * FROM choices WHERE owner = p
),
final AS (
    SELECT cnt, 'none' AS owner, log, done, last, _parent, pi AS _choice
    FROM enabled
)
SELECT * FROM final
