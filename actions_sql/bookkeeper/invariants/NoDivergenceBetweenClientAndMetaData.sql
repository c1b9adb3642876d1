-- BookKeeperProtocol.tla: NoDivergenceBetweenClientAndMetaData (invariant)
-- Once closed, exactly one client closed it at the ledger's end, and no writer is ahead of the end.
CASE WHEN meta_status = 'STATUS_CLOSED'
THEN size(filter(clients, c -> c.status = 'STATUS_CLOSED' AND c.lac = meta_last_entry)) = 1
     AND forall(clients, c -> c.status IN ('Nil', 'STATUS_IN_RECOVERY', 'RECOVERY_ABORTED')
                              OR c.lac <= meta_last_entry)
ELSE true END
