-- Liveness.p (Progress), reported as a finding, not checked: nothing but stuttering can happen any
-- more, no error, and some entry of the last producer was never committed
err = '' AND (committed & (shiftleft(1, NumProducers * NumEntries) - 1)
                         & ~(shiftleft(1, (NumProducers - 1) * NumEntries) - 1))
             <> ((shiftleft(1, NumProducers * NumEntries) - 1) & ~(shiftleft(1, (NumProducers - 1) * NumEntries) - 1))
