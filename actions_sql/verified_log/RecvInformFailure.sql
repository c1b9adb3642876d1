-- Coordinator.p: Coordinator, state Manage, on eInformNodeFailure (failedNodes += n; new segments
-- avoid it from now on).
WITH choices AS (
    SELECT f.*, w.mi, w.m
    FROM frontier AS f
    LATERAL VIEW posexplode(f.net) w AS mi, m
),

enabled AS (
    SELECT * FROM choices
    WHERE err = '' AND NOT coordDone
      AND m.t = 'IF'
),

step AS (
    SELECT * EXCEPT (failed, net),
        failed | shiftleft(1, m.n) AS failed,
        array_remove(net, m)       AS net
    FROM enabled
),

final AS (
    SELECT * EXCEPT (net, mi, m),
        vl_net(net, pc, pseg, size(logs), takeover.tseg, up) AS net,
        mi AS _choice
    FROM step
)

SELECT * FROM final
