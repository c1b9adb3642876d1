-- Producer.p, LogNode.p, Coordinator.p, Consumer.p: no in-machine assert fails and no P runtime error
-- (choosing from an empty set) happens; err holds the label of MODEL.md section 7
NOT startswith(err, 'A')
