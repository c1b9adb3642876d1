-- CounterLive.tla: EventuallyAllVisited == <>(visited = 0..Max)
-- form: <>
size(visited) = Max + 1
