-- LedgerChaining.tla: LedgerLimit (state constraint; the spec's bound 4 is the constant LedgerLimit)
md_next_lid < LedgerLimit
