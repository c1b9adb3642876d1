-- CreateProducers.p: CreateProducers, state TakeoverProducer (creates producer i, sends it
-- eProducerTakeOverLog); enabled once producer i-1 answered eTookOverLog, i.e. left TakeOverLog.
WITH choices AS (
    SELECT f.*, w.i
    FROM frontier AS f
    LATERAL VIEW explode(filter(sequence(0, NumProducers - 1), x -> x >= 1)) w AS i
),

enabled AS (
    SELECT * FROM choices
    WHERE err = '' AND NOT coordDone
      AND pc[i] = 'NotStarted'
      AND pc[i - 1] IN ('InitNewSegment', 'Produce', 'Done', 'Halted')
),

step AS (
    SELECT * EXCEPT (pc, cur, pseg),
        transform(pc, (x, j) -> IF(j = i, 'TakeOverLog', x))  AS pc,
        transform(cur, (x, j) -> IF(j = i, i * NumEntries, x)) AS cur,
        transform(pseg, (x, j) -> IF(j = i, -1, x))           AS pseg
    FROM enabled
),

final AS (
    SELECT * EXCEPT (net, i),
        vl_net(net, pc, pseg, size(logs), takeover.tseg, up) AS net,
        i AS _choice
    FROM step
)

SELECT * FROM final
