-- ReadCommitted.p: every READ_OK reply carries an entry that some producer (or the coordinator on its
-- behalf) announced committed
(readOK & ~committed) = 0
