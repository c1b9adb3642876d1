-- CounterLive.tla: EventuallyMax == <>(x = Max)
-- form: <>
x = Max
