-- BookKeeperProtocol_v4_13.tla: NoDivergenceBetweenWriterAndMetaData (invariant)
-- Once closed, every entry w1 has committed (ids 1..w1.lac) is within the ledger's end:
-- \A id \in 1..w1.lac : id <= meta_last_entry, i.e. w1.lac < 1 or w1.lac <= meta_last_entry.
meta_status != 'STATUS_CLOSED' OR w1.lac < 1 OR w1.lac <= meta_last_entry
