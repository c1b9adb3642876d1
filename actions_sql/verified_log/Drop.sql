-- NetworkFunctions.p: UnreliableSend (a one-shot message is lost; losing it later is the same as
-- losing it at send time, since nobody observed it). eInformNodeFailure, eProducersDone and
-- eConsumersDone are sent reliably.
WITH choices AS (
    SELECT f.*, w.mi, w.m
    FROM frontier AS f
    LATERAL VIEW posexplode(f.net) w AS mi, m
),

enabled AS (
    SELECT * FROM choices
    WHERE err = '' AND NOT coordDone
      AND m.t NOT IN ('IF', 'PD', 'CD')
      AND drops < MaxDrops
),

step AS (
    SELECT * EXCEPT (net, drops),
        array_remove(net, m) AS net,
        drops + 1            AS drops
    FROM enabled
),

final AS (
    SELECT * EXCEPT (net, mi, m),
        vl_net(net, pc, pseg, size(logs), takeover.tseg, up) AS net,
        mi AS _choice
    FROM step
)

SELECT * FROM final
