-- BookKeeperProtocol_v4_13.tla: ASSUME SendLimit \in Nat /\ SendLimit > 0 /\ WriteQuorum > 0 /\ AckQuorum > 0 /\ WriteQuorum >= AckQuorum
SendLimit > 0 AND WriteQuorum > 0 AND AckQuorum > 0 AND WriteQuorum >= AckQuorum
