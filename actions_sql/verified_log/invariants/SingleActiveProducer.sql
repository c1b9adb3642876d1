-- SingleActiveProducer.p: the monitor's assertions, checked at every eLogEntryCommitted (err records
-- the failed check; with NaiveSAP the blog's first version of the check)
err <> 'SingleActiveProducer'
