-- CounterLive.tla: EventuallyAlwaysBelowMax == <>[](x < Max)
-- form: <>[]
x < Max
