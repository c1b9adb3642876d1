-- Tokens.tla: Take(p)
WITH choices AS (
    SELECT f.*, pr.pi, pr.p
    FROM frontier AS f
    LATERAL VIEW posexplode(Procs) pr AS pi, p
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
