-- Helper (MODEL.md 4.3): the network as a canonical set, with dead messages removed (messages
-- whose delivery can only be a no-op): a reply the producer no longer waits for, a request to a
-- crashed node (a one-shot close, ES, of the variant no_end_retry too), a suspend reply for a segment
-- that is no longer last or when no takeover is pending, a close reply for a segment that is no
-- longer last.
CREATE OR REPLACE TEMPORARY FUNCTION vl_net(net ARRAY<STRUCT<t: STRING, p: INT, n: INT, s: INT, q: INT, num: INT, status: STRING, nodes: INT, owner: INT>>, pc ARRAY<STRING>, pseg ARRAY<INT>,
                                            nsegs INT, tseg INT, up INT)
RETURNS ARRAY<STRUCT<t: STRING, p: INT, n: INT, s: INT, q: INT, num: INT, status: STRING, nodes: INT, owner: INT>>
RETURN array_sort(array_distinct(filter(net, m -> CASE m.t
    WHEN 'NSR' THEN (pc[m.p] = 'TakeOverLog' AND m.status = 'OK')
                    OR (pc[m.p] = 'InitNewSegment' AND m.s = pseg[m.p] + 1)
    WHEN 'APR' THEN pc[m.p] = 'Produce' AND m.s = pseg[m.p]
    WHEN 'AP'  THEN (shiftright(up, m.n) & 1) = 1
    WHEN 'SU'  THEN (shiftright(up, m.n) & 1) = 1
    WHEN 'ES'  THEN (shiftright(up, m.n) & 1) = 1
    WHEN 'SUR' THEN m.s >= nsegs - 1 AND tseg >= 0
    WHEN 'ESR' THEN m.s >= nsegs - 1
    ELSE true END)))
