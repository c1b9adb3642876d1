-- Liveness.p: Progress, as the proxy MODEL.md 8.4 defines over the stored state graph,
-- AG EF (Goal \/ Blocked \/ coordDone): from every reachable state some path reaches a state where
--   Goal: PROGRESS (the last producer's entries but its last, (K-1)*E .. K*E-2) were all read (readOK);
--   Blocked: the bounds, not the protocol, stop progress:
--     (a) an action is disabled only because L = MaxSegments: a suspend reply (with a takeover pending)
--         or a close reply for the last segment, whose processing calls NewSegment at the bound;
--     (b) ptimeouts = MaxPTimeouts and a producer in Produce can only leave it by a timeout: a node of
--         its segment not in its acks is down, or has neither its AP nor its APR for the entry in flight;
--   coordDone: the coordinator is done (a terminal state).
-- form: AG EF
coordDone
OR (readOK & (shiftleft(1, NumProducers * NumEntries - 1) - 1) & ~(shiftleft(1, (NumProducers - 1) * NumEntries) - 1))
   = ((shiftleft(1, NumProducers * NumEntries - 1) - 1) & ~(shiftleft(1, (NumProducers - 1) * NumEntries) - 1))
OR (size(logs) = MaxSegments
    AND exists(net, m -> m.s = size(logs) - 1 AND (m.t = 'ESR' OR (m.t = 'SUR' AND takeover.tseg >= 0))))
OR (ptimeouts = MaxPTimeouts
    AND exists(sequence(0, NumProducers - 1), i -> pc[i] = 'Produce'
        AND exists(sequence(0, NumNodes - 1), n -> (shiftright(snodes[i] & ~acks[i], n) & 1) = 1
            AND ((shiftright(up, n) & 1) = 0
                 OR NOT exists(net, m -> m.n = n AND m.p = i AND m.s = pseg[i] AND m.q = cur[i]
                                         AND m.t IN ('AP', 'APR'))))))
