-- Coordinator.p: Coordinator, state Manage, on eConsumersDone (once producers and consumers are both done the
-- coordinator goes to Done: it shuts the nodes down and halts; nothing can happen afterwards).
WITH choices AS (
    SELECT f.*, w.mi, w.m
    FROM frontier AS f
    LATERAL VIEW posexplode(f.net) w AS mi, m
),

enabled AS (
    SELECT * FROM choices
    WHERE err = '' AND NOT coordDone
      AND m.t = 'CD'
),

step AS (
    SELECT * EXCEPT (consDone, coordDone, net),
        true AS consDone,
        prodDone AS coordDone,
        IF(prodDone, CAST(array() AS ARRAY<STRUCT<t: STRING, p: INT, n: INT, s: INT, q: INT, num: INT, status: STRING, nodes: INT, owner: INT>>),
           array_remove(net, m)) AS net
    FROM enabled
),

final AS (
    SELECT * EXCEPT (net, mi, m),
        vl_net(net, pc, pseg, size(logs), takeover.tseg, up) AS net,
        mi AS _choice
    FROM step
)

SELECT * FROM final
