-- FailureInjectorNotifier.p: FailureInjectorWithNotification, state FailOneNode (eShutDown to node
-- n, which halts: its segments are forgotten; eInformNodeFailure(n) to the coordinator).
WITH choices AS (
    SELECT f.*, w.n
    FROM frontier AS f
    LATERAL VIEW explode(sequence(0, NumNodes - 1)) w AS n
),

enabled AS (
    SELECT * FROM choices
    WHERE err = '' AND NOT coordDone
      AND vl_has(up, n)
      AND crashes < MaxCrashes
),

step AS (
    SELECT * EXCEPT (up, st, ent, crashes, net),
        up & ~shiftleft(1, n)                                                   AS up,
        transform(st, (row, j) -> IF(j = n, array_repeat('A', MaxSegments), row)) AS st,
        transform(ent, (row, j) -> IF(j = n, array_repeat(CAST(array() AS ARRAY<INT>), MaxSegments), row)) AS ent,
        crashes + 1                                                             AS crashes,
        array_append(net, named_struct('t', 'IF', 'p', 0, 'n', n, 's', 0, 'q', 0, 'num', 0, 'status', '', 'nodes', 0, 'owner', 0))                AS net
    FROM enabled
),

final AS (
    SELECT * EXCEPT (net, unacked, n),
        vl_net(net, pc, pseg, size(logs), takeover.tseg, up) AS net,
        -- n's closes are dropped here, at the crash, and nowhere else (MODEL.md 6.1): a close the
        -- coordinator adds for n afterwards stays in the set, part of the state though never delivered
        filter(unacked, u -> u.n <> n) AS unacked,
        n AS _choice
    FROM step
)

SELECT * FROM final
