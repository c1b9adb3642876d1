-- Producer.p: Producer, state Produce, on eTimeOut (clears appendAcks, goto InitNewSegment);
-- timeouts in TakeOverLog and InitNewSegment only re-send a request and are the persistent requests.
WITH choices AS (
    SELECT f.*, w.i
    FROM frontier AS f
    LATERAL VIEW explode(sequence(0, NumProducers - 1)) w AS i
),

enabled AS (
    SELECT * FROM choices
    WHERE err = '' AND NOT coordDone
      AND pc[i] = 'Produce'
      AND ptimeouts < MaxPTimeouts
),

step AS (
    SELECT * EXCEPT (pc, acks, ptimeouts),
        transform(pc, (x, j) -> IF(j = i, 'InitNewSegment', x)) AS pc,
        transform(acks, (x, j) -> IF(j = i, 0, x))             AS acks,
        ptimeouts + 1                                          AS ptimeouts
    FROM enabled
),

final AS (
    SELECT * EXCEPT (net, i),
        vl_net(net, pc, pseg, size(logs), takeover.tseg, up) AS net,
        i AS _choice
    FROM step
)

SELECT * FROM final
