-- CounterLive.tla: OneLeadsToMax == (x = 1) ~> (x = Max)
-- form: ~>
x = 1
~>
x = Max
