-- BookKeeperProtocol_v4_13.tla: OnlyValidFragments (invariant)
w1.status != 'STATUS_INVALID' AND w2.status != 'STATUS_INVALID'
