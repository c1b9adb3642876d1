-- compaction.tla: CompactedLedgerLeak
-- At most two compacted ledgers exist at once (reproduces Pulsar's compacted-ledger leak).
size(filter(compactedLedgers, l -> l IS NOT NULL)) <= 2
