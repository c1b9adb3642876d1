-- TestDriver.p: MultiReplicaWithFailure (creates the nodes, coordinator, consumer, failure injector
-- and CreateProducers); CreateProducers.p Init has producer 1 take over the log (it starts in
-- TakeOverLog, its eTakeOverLog is a persistent request). Producers are 0..NumProducers-1, nodes
-- 0..NumNodes-1, segments 0..MaxSegments-1; sets of nodes and of sequence numbers are bitmasks.
WITH producers AS (
    SELECT sequence(0, NumProducers - 1) AS ps
),

final AS (
    SELECT
        transform(ps, i -> IF(i = 0, 'TakeOverLog', 'NotStarted'))         AS pc,
        transform(ps, i -> i * NumEntries)                                  AS cur,
        transform(ps, i -> -1)                                              AS pseg,
        transform(ps, i -> 0)                                               AS snodes,
        transform(ps, i -> 0)                                               AS acks,
        transform(ps, i -> 0)                                               AS scount,
        false                                                               AS coordDone,
        CAST(array() AS ARRAY<STRUCT<nodes: INT, owner: INT>>)              AS logs,
        named_struct('tseg', -1, 'tprod', -1, 'tnodes', 0)                  AS takeover,
        CAST(array() AS ARRAY<STRUCT<n: INT, s: INT, num: INT, last: INT, np: INT>>) AS unacked,
        0                                                                   AS failed,
        false                                                               AS prodDone,
        false                                                               AS consDone,
        shiftleft(1, NumNodes) - 1                                          AS up,
        array_repeat(array_repeat('A', MaxSegments), NumNodes)              AS st,
        array_repeat(array_repeat(CAST(array() AS ARRAY<INT>), MaxSegments), NumNodes) AS ent,
        'FindSegmentNodes'                                                  AS cpc,
        0                                                                   AS cseg,
        0                                                                   AS coff,
        0                                                                   AS cnodes,
        -1                                                                  AS clast,
        0                                                                   AS crashes,
        0                                                                   AS drops,
        0                                                                   AS ptimeouts,
        CAST(array() AS ARRAY<STRUCT<t: STRING, p: INT, n: INT, s: INT, q: INT, num: INT, status: STRING, nodes: INT, owner: INT>>)                                        AS net,
        array_repeat(0, NumProducers * NumEntries)                          AS stored,
        0                                                                   AS durable,
        0                                                                   AS committed,
        0                                                                   AS readOK,
        -1                                                                  AS current,
        transform(ps, i -> -1)                                              AS hpc,
        ''                                                                  AS err
    FROM producers
)

SELECT * FROM final
