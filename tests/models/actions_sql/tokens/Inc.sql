-- Tokens.tla: Inc(p)
WITH choices AS (
    SELECT f.*, pr.pi, pr.p
    FROM frontier AS f
    LATERAL VIEW posexplode(Procs) pr AS pi, p
),
enabled AS (
    SELECT * FROM choices WHERE cnt[pi] < Max
),
final AS (
    SELECT transform(cnt, (x, i) -> IF(i = pi, x + 1, x)) AS cnt, owner, log, done,
           named_struct('who', p, 'n', cnt[pi] + 1) AS last, _parent, pi AS _choice
    FROM enabled
)
SELECT * FROM final
