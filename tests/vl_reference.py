"""An independent breadth-first search of the P verified log (step 04) in plain Python.

Written from MODEL.md (the P-verified log restated as a state machine) alone (faithful variant: the actions of section 6,
the assertions of 7, the safety monitors of 8, the canonicalisation of 4.3 and 13), separately from
the SQL translation. It reproduces the reference implementation's figures (MODEL.md 10.2 and 13:
T 468,276 states in 37 levels with the published profile, T-E1 78,825, F 400,939 in 28 levels), so
the tests compare the engine with it on constants MODEL.md gives no figures for, level by level.
Producers and nodes are numbered from 0, sets of nodes and sequence numbers are bitmasks, ⊥ is
None. ``from_engine_row`` turns a row of a run's states table into this search's state, to diff
one level of a run against ``explore(..., keep_states=True)``.
``python tests/vl_reference.py N R K E CRASHES DROPS PTIMEOUTS SEGMENTS`` runs it from the shell.
"""
from __future__ import annotations

import sys
from collections import namedtuple
from itertools import combinations

S = namedtuple("S", "pc cur seg snodes acks scount coordDone logs takeover unacked failed prodDone "
                    "consDone up st ent cpc cseg coff cnodes clast crashes drops ptimeouts net "
                    "stored durable committed readOK current hpc err")


def bits(mask, width):
    return [x for x in range(width) if mask >> x & 1]


def setat(t, i, v):
    return t[:i] + (v,) + t[i + 1:]


def explore(N, R, K, E, MAX_CRASHES=0, MAX_DROPS=0, MAX_PTIMEOUTS=0, MAX_SEGMENTS=2,
            keep_states=False, max_depth=None):
    """Breadth-first search of the configuration; returns (distinct states, new states per level from
    the initial state's level on, {error label: states}) and, with keep_states, each level's states.
    max_depth stops after that many levels (the initial state's level is 1)."""
    FINAL = K * E - 2
    ALL = (1 << N) - 1

    def base(i):
        return i * E

    def end(i):
        return (i + 1) * E

    def canon(s):
        # 4.3 dead-message elimination (the other two rules of 13 are part of Crash)
        L = len(s.logs)
        net = set()
        for m in s.net:
            t = m[0]
            if t == "NSR":
                _, p, status, ns, nodes, owner = m
                keep = (s.pc[p] == "TakeOverLog" and status == "OK") or \
                       (s.pc[p] == "InitNewSegment" and ns == s.seg[p] + 1)
            elif t == "APR":
                _, p, status, sg, q, n = m
                keep = s.pc[p] == "Produce" and sg == s.seg[p]
            elif t in ("AP", "SU"):
                keep = bool(s.up >> m[1] & 1)
            elif t == "SUR":
                keep = not (m[1] < L - 1 or s.takeover is None)
            elif t == "ESR":
                keep = not (m[2] < L - 1)
            else:
                keep = True
            if keep:
                net.add(m)
        return s._replace(net=frozenset(net))

    def segment_choices(s):
        live = ALL & ~s.failed
        if bin(live).count("1") < R:
            return None
        return [sum(1 << x for x in c) for c in combinations(bits(live, N), R)]

    def new_segment(s, p):
        """The successors of NewSegment(p) applied to s, one per node set; none at the segment bound."""
        L = len(s.logs)
        if L == MAX_SEGMENTS:
            return []
        ch = segment_choices(s)
        if ch is None:
            return [s._replace(err="A8")]
        return [s._replace(logs=s.logs + ((c, p),), net=s.net | {("NSR", p, "OK", L, c, p)}) for c in ch]

    def subsets(mask):
        members = bits(mask, N)
        out = []
        for r in range(len(members) + 1):
            for c in combinations(members, r):
                out.append(c)
        return out

    def stale_su(s, old):
        if old is None:
            return [s]
        tseg, tprod, tnodes = old
        return [s._replace(net=s.net | {("SU", x, tseg, tprod) for x in X}) for X in subsets(tnodes & s.up)]

    def commit(s, i, q):
        err = s.err
        if err is None and not s.durable >> q & 1 and bin(s.stored[q]).count("1") < R:
            err = "CommitDurability"
        committed = s.committed | 1 << q
        if err is None and s.current != i and (s.hpc[i] is None or s.hpc[i] < q):
            err = "SingleActiveProducer"
        return s._replace(committed=committed, err=err)

    def produce_entry(s, i):
        hpc = s.hpc
        if s.current == i:
            hpc = setat(hpc, i, s.cur[i])
        err = s.err
        if s.current is None and err is None:
            err = "A10"
        if s.snodes[i] == 0 and err is None:
            err = "A1"
        net = s.net | {("AP", n, i, s.seg[i], s.cur[i]) for n in bits(s.snodes[i], N)}
        return s._replace(hpc=hpc, net=net, err=err)

    def is_last(s, prev):
        L = len(s.logs)
        if prev == -1:
            if L > 0:
                return ("NOT_LAST", s.logs[0][0], s.logs[0][1])
            return ("IS_LAST", 0, None)
        if not (L > 0 and prev + 1 <= L):
            return None
        if prev + 1 < L:
            return ("NOT_LAST", s.logs[prev + 1][0], s.logs[prev + 1][1])
        return ("IS_LAST", s.logs[L - 1][0], None)

    def set_seg(s, n, k, status, entries):
        return s._replace(st=setat(s.st, n, setat(s.st[n], k, status)),
                          ent=setat(s.ent, n, setat(s.ent[n], k, entries)))

    def succ(s):
        out = []   # list of (label, state)
        if s.err is not None or s.coordDone:
            return out
        L = len(s.logs)
        # 6.1 StartProducer
        for i in range(1, K):
            if s.pc[i] == "NotStarted" and s.pc[i - 1] in ("InitNewSegment", "Produce", "Done", "Halted"):
                out.append(("StartProducer", s._replace(pc=setat(s.pc, i, "TakeOverLog"),
                                                        cur=setat(s.cur, i, base(i)),
                                                        seg=setat(s.seg, i, -1))))
        # ProducerTimeout
        for i in range(K):
            if s.pc[i] == "Produce" and s.ptimeouts < MAX_PTIMEOUTS:
                out.append(("ProducerTimeout", s._replace(acks=setat(s.acks, i, 0),
                                                          pc=setat(s.pc, i, "InitNewSegment"),
                                                          ptimeouts=s.ptimeouts + 1)))
        # Crash
        for n in range(N):
            if s.up >> n & 1 and s.crashes < MAX_CRASHES:
                out.append(("Crash", s._replace(
                    up=s.up & ~(1 << n),
                    st=setat(s.st, n, ("A",) * MAX_SEGMENTS),
                    ent=setat(s.ent, n, ((),) * MAX_SEGMENTS),
                    crashes=s.crashes + 1,
                    net=s.net | {("IF", n)},
                    unacked=frozenset(u for u in s.unacked if u[0] != n))))
        # Drop
        if s.drops < MAX_DROPS:
            for m in s.net:
                if m[0] not in ("IF", "PD", "CD"):
                    out.append(("Drop", s._replace(net=s.net - {m}, drops=s.drops + 1)))
        # 6.2 CoordTakeOverLog
        for i in range(K):
            if s.pc[i] != "TakeOverLog":
                continue
            if L == 0:
                out += [("CoordTakeOverLog", x) for x in new_segment(s, i)]
                continue
            if s.takeover is not None and s.takeover[0] == L - 1:
                out.append(("CoordTakeOverLog", s))
                continue
            if s.logs[L - 1][1] == i:
                out.append(("CoordTakeOverLog", s._replace(net=s.net | {("NSR", i, "OK", L - 1, s.logs[L - 1][0], i)})))
                continue
            old = s.takeover
            s2 = s._replace(takeover=(L - 1, i, s.logs[L - 1][0]))
            out += [("CoordTakeOverLog", x) for x in stale_su(s2, old)]
        # CoordNewSegment
        for i in range(K):
            if s.pc[i] != "InitNewSegment":
                continue
            prev, num = s.seg[i], s.scount[i]
            if s.takeover is not None:
                out.append(("CoordNewSegment", s._replace(net=s.net | {("NSR", i, "LOG_IN_TAKEOVER", prev + 1, 0, s.takeover[1])})))
                continue
            il = is_last(s, prev)
            if il is None:
                out.append(("CoordNewSegment", s._replace(err="A6")))
                continue
            status, nodes, owner = il
            if status == "NOT_LAST":
                if owner == i:
                    m = ("NSR", i, "OK", prev + 1, nodes, i)
                else:
                    m = ("NSR", i, "ALREADY_APPENDED", prev + 1, 0, owner)
                out.append(("CoordNewSegment", s._replace(net=s.net | {m})))
                continue
            if prev == -1:
                out += [("CoordNewSegment", x) for x in new_segment(s, i)]
                continue
            out.append(("CoordNewSegment", s._replace(
                unacked=s.unacked | {(n, prev, num, 0, i) for n in bits(nodes, N)})))
        # messages
        for m in s.net:
            t = m[0]
            rest = s._replace(net=s.net - {m})
            if t == "SUR":
                _, sg, p, num, last = m
                il = is_last(rest, sg)
                if il is None:
                    out.append(("RecvSuspendResp", rest._replace(err="A6")))
                    continue
                status, nodes, _o = il
                if status != "IS_LAST" or rest.takeover is None:
                    out.append(("RecvSuspendResp", rest))
                    continue
                x = rest
                if num > 0:
                    x = x._replace(durable=x.durable | 1 << last, current=p)
                    x = commit(x, p, last)
                x = x._replace(unacked=x.unacked | {(n, sg, num, last, p) for n in bits(nodes, N)})
                old = x.takeover
                x = x._replace(takeover=None)
                for y in new_segment(x, p):
                    out += [("RecvSuspendResp", z) for z in stale_su(y, old)]
            elif t == "ESR":
                _, n, sg, last, np_ = m
                if L == 0:
                    out.append(("RecvEndSegmentResp", rest._replace(err="A7")))
                    continue
                if sg != L - 1:
                    out.append(("RecvEndSegmentResp", rest))
                    continue
                out += [("RecvEndSegmentResp", x) for x in new_segment(rest, np_)]
            elif t == "IF":
                out.append(("RecvInformFailure", rest._replace(failed=rest.failed | 1 << m[1])))
            elif t in ("PD", "CD"):
                pd = rest.prodDone or t == "PD"
                cd = rest.consDone or t == "CD"
                x = rest._replace(prodDone=pd, consDone=cd)
                if pd and cd:
                    x = x._replace(coordDone=True, net=frozenset())
                out.append(("RecvProducersDone" if t == "PD" else "RecvConsumersDone", x))
            elif t == "AP":
                _, n, p, sg, q = m
                if not rest.up >> n & 1:
                    continue
                x = rest
                if x.st[n][sg] == "A":
                    x = set_seg(x, n, sg, "O", ())
                if x.st[n][sg] in ("C", "S"):
                    out.append(("RecvAppend", x._replace(net=x.net | {("APR", p, "SEG_CLOSED", sg, q, n)})))
                    continue
                e = x.ent[n][sg]
                if e and not q > e[-1]:
                    out.append(("RecvAppend", x._replace(err="A4")))
                    continue
                x = x._replace(stored=setat(x.stored, q, x.stored[q] | 1 << n))
                x = set_seg(x, n, sg, x.st[n][sg], e + (q,))
                out.append(("RecvAppend", x._replace(net=x.net | {("APR", p, "OK", sg, q, n)})))
            elif t == "SU":
                _, n, sg, p = m
                if not rest.up >> n & 1:
                    continue
                out.append(("RecvSuspend", suspend(rest, n, sg, p)))
            elif t == "NSR":
                _, p, status, ns, nodes, owner = m
                pc = rest.pc[p]
                if pc == "TakeOverLog":
                    if status != "OK":
                        out.append(("RecvNewSegResp", rest))
                        continue
                    x = rest._replace(seg=setat(rest.seg, p, ns), snodes=setat(rest.snodes, p, nodes),
                                      scount=setat(rest.scount, p, 0), current=p,
                                      pc=setat(rest.pc, p, "Produce"))
                    out.append(("RecvNewSegResp", produce_entry(x, p)))
                elif pc == "InitNewSegment":
                    if ns != rest.seg[p] + 1:
                        out.append(("RecvNewSegResp", rest))
                        continue
                    if status == "LOG_IN_TAKEOVER" or owner != p:
                        out.append(("RecvNewSegResp", rest._replace(pc=setat(rest.pc, p, "Halted"))))
                        continue
                    x = rest._replace(seg=setat(rest.seg, p, ns), snodes=setat(rest.snodes, p, nodes),
                                      scount=setat(rest.scount, p, 0), pc=setat(rest.pc, p, "Produce"))
                    out.append(("RecvNewSegResp", produce_entry(x, p)))
                elif pc in ("Produce", "Done"):
                    out.append(("RecvNewSegResp", rest))
            elif t == "APR":
                _, i, status, sg, q, n = m
                if rest.pc[i] != "Produce" or sg != rest.seg[i]:
                    out.append(("RecvAppendResp", rest))
                    continue
                if status == "SEG_CLOSED" and q == rest.cur[i]:
                    out.append(("RecvAppendResp", rest._replace(pc=setat(rest.pc, i, "InitNewSegment"))))
                    continue
                if status != "OK":
                    out.append(("RecvAppendResp", rest._replace(err="A2")))
                    continue
                acks = rest.acks[i] | 1 << n
                if bin(acks).count("1") < bin(rest.snodes[i]).count("1"):
                    out.append(("RecvAppendResp", rest._replace(acks=setat(rest.acks, i, acks))))
                    continue
                x = rest._replace(acks=setat(rest.acks, i, 0), scount=setat(rest.scount, i, rest.scount[i] + 1),
                                  cur=setat(rest.cur, i, rest.cur[i] + 1))
                x = commit(x, i, q)
                if x.cur[i] == end(i):
                    x = x._replace(pc=setat(x.pc, i, "Done"))
                    if i == K - 1:
                        x = x._replace(net=x.net | {("PD",)})
                else:
                    x = produce_entry(x, i)
                out.append(("RecvAppendResp", x))
        # NodeSuspend (persistent)
        if s.takeover is not None:
            tseg, tprod, tnodes = s.takeover
            for n in bits(tnodes, N):
                if s.up >> n & 1:
                    out.append(("NodeSuspend", suspend(s, n, tseg, tprod)))
        # NodeEndSegment (persistent)
        for u in s.unacked:
            n, sg, num, last, np_ = u
            if not s.up >> n & 1:
                continue
            e = list(s.ent[n][sg])
            while len(e) > num:
                e.pop()
            if len(e) == num - 1:
                e.append(last)
            x = set_seg(s, n, sg, "C", tuple(e))
            if len(e) != num:
                x = x._replace(err="A5")
            out.append(("NodeEndSegment", x._replace(net=x.net | {("ESR", n, sg, last, np_)})))
        # 6.6 consumer
        if s.cpc == "FindSegmentNodes" and s.cseg < L:
            out.append(("ConsumerFindSegment", s._replace(cnodes=s.logs[s.cseg][0], cpc="Consume")))
        if s.cpc == "Consume" and s.cseg < MAX_SEGMENTS:
            for n in bits(s.cnodes, N):
                if not s.up >> n & 1 or s.st[n][s.cseg] == "A":
                    continue
                stt, e = s.st[n][s.cseg], s.ent[n][s.cseg]
                z = len(e)
                if stt == "C" and s.coff == z - 1:
                    ans = "OK"
                elif z - 1 <= s.coff:
                    ans = "NEW" if stt == "C" else None
                else:
                    ans = "OK"
                if ans is None:
                    continue
                if ans == "NEW":
                    out.append(("ConsumerRead", s._replace(cseg=s.cseg + 1, coff=0, cpc="FindSegmentNodes")))
                    continue
                q = e[s.coff]
                x = s._replace(readOK=s.readOK | 1 << q)
                err = x.err
                if x.readOK & ~x.committed and err is None:
                    err = "ReadCommitted"
                if q % E != 0 and not (q == s.clast or q == s.clast + 1) and err is None:
                    err = "A9"
                x = x._replace(err=err, coff=s.coff + 1, clast=q if q >= s.clast + 1 else s.clast)
                if q == FINAL:
                    x = x._replace(cpc="Done", net=x.net | {("CD",)})
                out.append(("ConsumerRead", x))
        return out

    def suspend(s, n, sg, p):
        e = s.ent[n][sg]
        x = set_seg(s, n, sg, "S", e)
        c = len(e)
        last = e[-1] if c > 0 else 0
        return x._replace(net=x.net | {("SUR", sg, p, c, last)})

    init = S(pc=tuple("TakeOverLog" if i == 0 else "NotStarted" for i in range(K)),
             cur=tuple(base(i) for i in range(K)), seg=(-1,) * K, snodes=(0,) * K, acks=(0,) * K,
             scount=(0,) * K, coordDone=False, logs=(), takeover=None, unacked=frozenset(), failed=0,
             prodDone=False, consDone=False, up=ALL, st=(("A",) * MAX_SEGMENTS,) * N,
             ent=(((),) * MAX_SEGMENTS,) * N, cpc="FindSegmentNodes", cseg=0, coff=0, cnodes=0, clast=-1,
             crashes=0, drops=0, ptimeouts=0, net=frozenset(), stored=(0,) * (K * E), durable=0,
             committed=0, readOK=0, current=None, hpc=(None,) * K, err=None)
    init = canon(init)
    seen = {init}
    frontier = [init]
    profile = [1]
    levels = [[init]] if keep_states else None
    errors = {}
    while frontier:
        if max_depth is not None and len(profile) >= max_depth:
            break
        nxt = []
        for s in frontier:
            for _action, t in succ(s):
                t = canon(t)
                if t not in seen:
                    seen.add(t)
                    nxt.append(t)
                    if t.err is not None:
                        errors.setdefault(t.err, 0)
                        errors[t.err] += 1
        if not nxt:
            break
        profile.append(len(nxt))
        if keep_states:
            levels.append(nxt)
        frontier = nxt
    return (len(seen), profile, errors, levels) if keep_states else (len(seen), profile, errors)


def _engine_message(m):
    t = m["t"]
    if t == "NSR":
        return ("NSR", m["p"], m["status"], m["s"], m["nodes"], m["owner"])
    if t == "AP":
        return ("AP", m["n"], m["p"], m["s"], m["q"])
    if t == "APR":
        return ("APR", m["p"], m["status"], m["s"], m["q"], m["n"])
    if t == "SU":
        return ("SU", m["n"], m["s"], m["p"])
    if t == "SUR":
        return ("SUR", m["s"], m["p"], m["num"], m["q"])
    if t == "ESR":
        return ("ESR", m["n"], m["s"], m["q"], m["p"])
    if t == "IF":
        return ("IF", m["n"])
    return (t,)


def from_engine_row(r):
    """A row of schemas/verified_log.yml's state (a dict, e.g. from the run's states table) as this
    search's state: -1 and '' for "none" become None, the network and unacked become sets."""
    to = r["takeover"]
    return S(pc=tuple(r["pc"]), cur=tuple(r["cur"]), seg=tuple(r["pseg"]), snodes=tuple(r["snodes"]),
             acks=tuple(r["acks"]), scount=tuple(r["scount"]), coordDone=r["coordDone"],
             logs=tuple((x["nodes"], x["owner"]) for x in r["logs"]),
             takeover=None if to["tseg"] < 0 else (to["tseg"], to["tprod"], to["tnodes"]),
             unacked=frozenset((u["n"], u["s"], u["num"], u["last"], u["np"]) for u in r["unacked"]),
             failed=r["failed"], prodDone=r["prodDone"], consDone=r["consDone"], up=r["up"],
             st=tuple(tuple(x) for x in r["st"]), ent=tuple(tuple(tuple(y) for y in x) for x in r["ent"]),
             cpc=r["cpc"], cseg=r["cseg"], coff=r["coff"], cnodes=r["cnodes"], clast=r["clast"],
             crashes=r["crashes"], drops=r["drops"], ptimeouts=r["ptimeouts"],
             net=frozenset(_engine_message(m) for m in r["net"]), stored=tuple(r["stored"]),
             durable=r["durable"], committed=r["committed"], readOK=r["readOK"],
             current=None if r["current"] < 0 else r["current"],
             hpc=tuple(None if h < 0 else h for h in r["hpc"]), err=r["err"] or None)


if __name__ == "__main__":
    states, levels, errors = explore(*(int(a) for a in sys.argv[1:9]))
    print(f"{states} states, {len(levels)} levels: {levels}; errors: {errors or 'none'}")
