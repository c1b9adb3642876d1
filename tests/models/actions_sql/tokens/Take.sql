-- Tokens.tla: Take(p)
WITH choices AS (
    SELECT f.*, pr.pi, pr.p
    FROM frontier AS f
    CROSS JOIN (SELECT posexplode(Procs) AS (pi, p)) AS pr
),
enabled AS (
    SELECT * FROM choices WHERE owner = 'none' AND size(log) < LogLen
),
final AS (
    SELECT cnt, p AS owner, array_append(log, p) AS log,
           array_sort(array_distinct(array_append(done, p))) AS done, last, _parent, pi AS _choice
    FROM enabled
)
SELECT * FROM final
