-- Coordinator.p: CreateSegment (called by AcknowledgeNewSegment): every R-subset of the nodes the
-- coordinator does not know to have failed; [-1] stands for P's "choose from an empty set" error.
CREATE OR REPLACE TEMPORARY FUNCTION vl_segment_choices(failed INT, nodes INT, replicas INT) RETURNS ARRAY<INT>
RETURN IF(bit_count((shiftleft(1, nodes) - 1) & ~failed) < replicas,
          array(-1),
          filter(sequence(0, shiftleft(1, nodes) - 1),
                 x -> bit_count(x) = replicas AND (x & failed) = 0))
