-- Consumer.p: Consumer, state FindSegmentNodes, on eSegmentStateResponse (request and reply made one
-- step: the consumer looks the segment up in the coordinator's logs; SEG_NOT_INIT is a retry).
WITH enabled AS (
    SELECT * FROM frontier
    WHERE err = '' AND NOT coordDone
      AND cpc = 'FindSegmentNodes'
      AND cseg < size(logs)
),

step AS (
    SELECT * EXCEPT (cnodes, cpc),
        logs[cseg].nodes AS cnodes,
        'Consume'        AS cpc
    FROM enabled
),

final AS (
    SELECT * EXCEPT (net),
        vl_net(net, pc, pseg, size(logs), takeover.tseg, up) AS net
    FROM step
)

SELECT * FROM final
