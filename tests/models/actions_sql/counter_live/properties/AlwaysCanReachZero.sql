-- CounterLive.tla: AlwaysCanReachZero == AG EF (x = 0) (CTL: every reachable state can reach x = 0)
-- form: AG EF
x = 0
