"""An independent, plain-Python breadth-first search of compaction.tla with TLC's counting rules, used to
cross-check the SQL translation on constants the oracle does not cover. States are tuples; Nil is None."""
from __future__ import annotations

from itertools import product

PHASE_ONE, TWO_WRITE, TWO_CTX, TWO_HORIZON, TWO_CURSOR, TWO_DELETE = range(6)


def explore(MessageSentLimit, CompactionTimesLimit, ModelConsumer, ConsumeTimesLimit, KeySpace, ValueSpace,
            RetainNullKey, MaxCrashTimes, ModelProducer):
    keys = sorted({0, *KeySpace})
    values = sorted({0, *ValueSpace})

    def max_id(ledgers):
        ids = [i + 1 for i, l in enumerate(ledgers) if l is not None]
        return max(ids) if ids else 0

    # state: (messages, ledgers, cursor, phase, p1, horizon, ctx, crashes, consumes)
    empty = tuple([None] * CompactionTimesLimit)
    if ModelProducer:
        inits = [((), empty, None, PHASE_ONE, None, 0, 0, 0, 0)]
    else:
        inits = [(tuple((i + 1, k, v) for i, (k, v) in enumerate(combo)), empty, None, PHASE_ONE, None, 0, 0, 0, 0)
                 for combo in product(product(keys, values), repeat=MessageSentLimit)]

    def successors(s):
        msgs, led, cur, ph, p1, hor, ctx, cr, co = s
        out = []
        if ModelProducer and len(msgs) < MessageSentLimit:
            for k in keys:
                for v in values:
                    out.append((msgs + ((len(msgs) + 1, k, v),), led, cur, ph, p1, hor, ctx, cr, co))
        if ph == PHASE_ONE and p1 is None and msgs:
            latest = {}
            for i, m in enumerate(msgs, 1):
                if m[1] != 0:
                    latest[m[1]] = i
            out.append((msgs, led, cur, TWO_WRITE, (len(msgs), tuple(sorted(latest.items()))), hor, ctx, cr, co))
        if p1 is not None and ph == TWO_WRITE:
            new = max_id(led) + 1
            if 1 <= new <= CompactionTimesLimit:
                latest = dict(p1[1])
                kept = tuple(m for i, m in enumerate(msgs[:p1[0]], 1)
                             if (RetainNullKey if m[1] == 0 else latest[m[1]] == i))
                led2 = tuple(kept if i + 1 == new else l for i, l in enumerate(led))
                out.append((msgs, led2, cur, TWO_CTX, p1, hor, ctx, cr, co))
        if ph == TWO_CTX:
            out.append((msgs, led, cur, TWO_HORIZON, p1, hor, max_id(led), cr, co))
        if ph == TWO_HORIZON:
            out.append((msgs, led, cur, TWO_CURSOR, p1, p1[0], ctx, cr, co))
        if ph == TWO_CURSOR:
            out.append((msgs, led, (hor, ctx), TWO_DELETE, p1, hor, ctx, cr, co))
        if ph == TWO_DELETE:
            old = max_id(led) - 1
            led2 = led if old < 1 or led[old - 1] is None else \
                tuple(None if i + 1 == old else l for i, l in enumerate(led))
            out.append((msgs, led2, cur, PHASE_ONE, None, hor, ctx, cr, co))
        if cr < MaxCrashTimes:
            h, c = cur if cur is not None else (0, 0)
            out.append((msgs, led, cur, PHASE_ONE, None, h, c, cr + 1, co))
        if ModelConsumer:
            out.append(s)
        if (len(msgs) == MessageSentLimit and ph == TWO_WRITE and max_id(led) == CompactionTimesLimit
                and (not ModelConsumer or co == ConsumeTimesLimit)):
            out.append(s)
        return out

    seen = set(inits)
    frontier = list(dict.fromkeys(inits))
    generated, depth, deadlocks = len(inits), 1, 0
    while frontier:
        nxt = []
        for s in frontier:
            succ = successors(s)
            generated += len(succ)
            deadlocks += not succ
            for t in succ:
                if t not in seen:
                    seen.add(t)
                    nxt.append(t)
        if not nxt:
            break
        frontier = nxt
        depth += 1
    return {"distinct": len(seen), "generated": generated, "depth": depth, "deadlocks": deadlocks}


if __name__ == "__main__":
    print(explore(3, 3, False, 2, [1, 2], [1, 2], True, 1, False))   # TLC: 45,198 distinct, 60,507 generated, depth 20
    print(explore(3, 3, False, 2, [1, 2], [1, 2], True, 1, True))    # TLC: 276,608 distinct, 479,747 generated, depth 23
