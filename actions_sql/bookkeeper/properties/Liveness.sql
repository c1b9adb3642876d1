-- BookKeeperProtocol.tla: Liveness, WF_vars(Next) /\ []<>LedgerIsClosed: under weak fairness of Next,
-- infinitely often the ledger is closed. LedgerIsClosed quantifies over the function `clients` (TLC
-- cannot enumerate it); this is its evident intent, as the oracle's BK_Live.tla writes it: the
-- metadata store's status is closed and some client c \in Clients has clients[c].status closed.
-- The formula's own WF_vars(Next) is the fairness it is checked under (docs/models/bookkeeper.md).
-- form: []<>
-- fairness: weak
meta_status = 'STATUS_CLOSED' AND exists(clients, c -> c.status = 'STATUS_CLOSED')
