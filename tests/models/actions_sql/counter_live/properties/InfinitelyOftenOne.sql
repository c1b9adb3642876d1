-- CounterLive.tla: InfinitelyOftenOne == []<>(x = 1)
-- form: []<>
x = 1
