-- Counter.tla: Bounded (invariant)
x <= Limit
