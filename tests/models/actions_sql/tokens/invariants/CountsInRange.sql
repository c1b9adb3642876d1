-- Tokens.tla: CountsInRange (invariant)
forall(cnt, x -> x BETWEEN 0 AND Max)
