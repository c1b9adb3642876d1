-- SingleActiveProducer.p: on eLogEntryCommitted. A commit by p of q is fine if p is the current
-- producer, or if p tried q (or a later entry) while it was current (highestPossibleCommit).
-- naive: the first attempt of the blog's part 5, commits must come from the current producer.
CREATE OR REPLACE TEMPORARY FUNCTION vl_sap_ok(naive BOOLEAN, cur_producer INT, p INT, hpc INT, q INT)
RETURNS BOOLEAN
RETURN cur_producer = p OR (NOT naive AND hpc >= 0 AND hpc >= q)
