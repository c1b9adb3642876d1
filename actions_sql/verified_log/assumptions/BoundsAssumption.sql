-- TestDriver.p / MODEL.md section 2: the bounds the encoding needs (node sets and sequence numbers
-- are bitmasks in an INT, segment choices enumerate 2^NumNodes masks); NumReplicas <= NumNodes -
-- MaxCrashes keeps segment creation possible (otherwise P fails choosing from an empty set, A8)
NumNodes BETWEEN 1 AND 8
AND NumReplicas BETWEEN 1 AND NumNodes - MaxCrashes
AND NumProducers BETWEEN 1 AND 8
AND NumEntries >= 1
AND NumProducers * NumEntries <= 30
AND MaxSegments >= 1
AND MaxCrashes >= 0 AND MaxDrops >= 0 AND MaxPTimeouts >= 0
