"""An independent breadth-first search of BookKeeperProtocol_v4_13.tla in plain Python.

Written from the spec (Vanlightly/bookkeeper-tlaplus, with MessagePassing_v4_13.tla), separately
from the SQL translation, with TLC's semantics: initial states are level 1, every successor
counts as generated, invariants are checked on each new state in the cfg's order, a state with no
successor is a deadlock when deadlock checking is on. The tests compare the engine's figures with
this search on small constants; ``python tests/bk_v413_reference.py`` runs it from the shell.

CHOOSE over ``SUBSET Bookies`` (SelectEnsemble) takes the first subset of size WriteQuorum in
lexicographic order of the sorted bookies. For up to three bookies, which is all the tests use,
that is the subset TLC's enumeration meets first as well.
"""
from __future__ import annotations

import itertools
import sys
from collections import namedtuple

NIL = None
OPEN, IN_RECOVERY, CLOSED, INVALID = "STATUS_OPEN", "STATUS_IN_RECOVERY", "STATUS_CLOSED", "STATUS_INVALID"
ADD_REQ, ADD_RESP = "AddEntryRequestMessage", "AddEntryResponseMessage"
FENCE_REQ, FENCE_RESP = "FenceRequestMessage", "FenceResponseMessage"
READ_REQ, READ_RESP = "ReadRequestMessage", "ReadResponseMessage"
FENCING, READ, PENDING_READ, WRITE = 1, 2, 3, 4

# One record type for every message kind; fields a kind does not have stay None.
Msg = namedtuple("Msg", "type bookie entry lac recovery success entry_id fence",
                 defaults=(None,) * 8)
Entry = namedtuple("Entry", "id data")
Fragment = namedtuple("Fragment", "id ensemble first_entry_id")      # ensemble: frozenset
Op = namedtuple("Op", "entry fragment_id ensemble")
Writer = namedtuple("Writer", "meta_version status curr_fragment pending_add_ops lap lac confirmed "
                              "fenced curr_read_entry has_entry no_such_entry recovery_phase")
State = namedtuple("State", "meta_status meta_fragments meta_last_entry meta_version b_entries "
                            "b_fenced b_lac w1 w2 messages")

INVARIANTS = ["TypeOK", "OnlyValidFragments", "NoOutOfOrderEntries",
              "NoDivergenceBetweenWriterAndMetaData", "AllCommittedEntriesReachAckQuorum"]


class Spec:
    def __init__(self, bookies, wq, aq, send_limit, rrf):
        self.B = sorted(bookies)
        self.WQ, self.AQ, self.SL, self.RRF = wq, aq, send_limit, rrf
        self.bi = {b: i for i, b in enumerate(self.B)}

    # ---------------------------------------------------------------- helpers
    def init(self):
        w = Writer(NIL, NIL, NIL, frozenset(), 0, 0, tuple(frozenset() for _ in range(self.SL)),
                   frozenset(), NIL, frozenset(), frozenset(), 0)
        n = len(self.B)
        return State(NIL, (), 0, 0, (frozenset(),) * n, (False,) * n, (0,) * n, w, w, frozenset())

    @staticmethod
    def set_at(t, i, v):
        return t[:i] + (v,) + t[i + 1:]

    def valid_ensemble(self, s, e, inc, exc):
        return (len(e) == self.WQ and not (e & exc) and inc <= e
                and all(e != f.ensemble for f in s.meta_fragments))

    def ensembles(self, s, inc, exc):
        for c in itertools.combinations(self.B, self.WQ):
            e = frozenset(c)
            if self.valid_ensemble(s, e, inc, exc):
                yield e

    def select_ensemble(self, s, inc, exc):
        return next(self.ensembles(s, inc, exc))

    @staticmethod
    def fragment_of_entry_id(s, eid):
        mf = s.meta_fragments
        if len(mf) == 1:
            return mf[0]
        if mf[-1].first_entry_id <= eid:
            return mf[-1]
        for f1 in mf:
            if any(f1.id == f2.id - 1 and f1.first_entry_id <= eid and f2.first_entry_id > eid for f2 in mf):
                return f1
        raise RuntimeError("FragmentOfEntryId: CHOOSE found no fragment")

    @staticmethod
    def receivable(msgs, m, t):
        return m.type == t and msgs[m] >= 1

    def is_earliest(self, msgs, m):
        return not any(self.receivable(msgs, m2, m.type) and m2.recovery == m.recovery
                       and m2.entry.id < m.entry.id and m2.bookie == m.bookie for m2 in msgs)

    def send_to_ensemble(self, msgs, new):
        """SendMessagesToEnsemble: every new message delivered once or lost (-1)."""
        if any(m in msgs for m in new):
            return []
        new = sorted(new)
        out = []
        for counts in itertools.product((-1, 1), repeat=len(new)):
            d = dict(msgs)
            d.update(zip(new, counts))
            out.append(d)
        return out

    @staticmethod
    def processed_and_send(msgs, rec, snd):
        if rec not in msgs or snd in msgs or msgs[rec] < 1:
            return []
        out = []
        for dc in (-1, 1):
            d = dict(msgs)
            d[rec] -= 1
            d[snd] = dc
            out.append(d)
        return out

    @staticmethod
    def processed(msgs, m):
        d = dict(msgs)
        d[m] -= 1
        return d

    def add_requests(self, w, entry, ensemble, recovery):
        return {Msg(ADD_REQ, b, entry, w.lac, recovery) for b in ensemble}

    @staticmethod
    def write_timeouts(msgs, b, recovery):
        """WriteTimeoutForBookie's witnesses: the lost add messages of bookie b."""
        return sum(1 for m, c in msgs.items()
                   if c == -1 and m.bookie == b and m.type in (ADD_REQ, ADD_RESP) and m.recovery == recovery)

    @staticmethod
    def read_timeout(msgs, b):
        return any(c == -1 and m.bookie == b and m.type in (READ_REQ, READ_RESP) for m, c in msgs.items())

    def read_timeout_count(self, msgs, ensemble):
        return sum(1 for b in ensemble if self.read_timeout(msgs, b))

    # ---------------------------------------------------------------- actions
    def successors(self, s):
        """[(action, state)] in Next's order."""
        msgs = dict(s.messages)
        out = []
        for name in ACTIONS:
            for t in getattr(self, name)(s, msgs):
                out.append((name, t))
        return out

    def mk(self, s, msgs=None, **kw):
        if msgs is not None:
            kw["messages"] = frozenset(msgs.items())
        return s._replace(**kw)

    def BookieSendsAddConfirmedResponse(self, s, msgs):
        for m in msgs:
            if not (self.receivable(msgs, m, ADD_REQ) and self.is_earliest(msgs, m)):
                continue
            i = self.bi[m.bookie]
            # \/ b_fenced[msg.bookie] = FALSE \/ msg.recovery = TRUE: TLC generates the step once for
            # each disjunct that holds (docs/generated-counts.md)
            for _ in range((s.b_fenced[i] is False) + (m.recovery is True)):
                resp = Msg(ADD_RESP, m.bookie, m.entry, recovery=m.recovery, success=True)
                for d in self.processed_and_send(msgs, m, resp):
                    yield self.mk(s, d, b_entries=self.set_at(s.b_entries, i, s.b_entries[i] | {m.entry}),
                                  b_lac=self.set_at(s.b_lac, i, m.lac))

    def BookieSendsAddFencedResponse(self, s, msgs):
        for m in msgs:
            if (self.receivable(msgs, m, ADD_REQ) and m.recovery is False and s.b_fenced[self.bi[m.bookie]]
                    and self.is_earliest(msgs, m)):
                resp = Msg(ADD_RESP, m.bookie, m.entry, recovery=m.recovery, success=False)
                for d in self.processed_and_send(msgs, m, resp):
                    yield self.mk(s, d)

    def BookieSendsFencingReadLacResponse(self, s, msgs):
        for m in msgs:
            if self.receivable(msgs, m, FENCE_REQ):
                i = self.bi[m.bookie]
                for d in self.processed_and_send(msgs, m, Msg(FENCE_RESP, m.bookie, lac=s.b_lac[i])):
                    yield self.mk(s, d, b_fenced=self.set_at(s.b_fenced, i, True))

    def BookieSendsReadResponse(self, s, msgs):
        for m in msgs:
            if self.receivable(msgs, m, READ_REQ):
                i = self.bi[m.bookie]
                have = sorted(e for e in s.b_entries[i] if e.id == m.entry_id)
                resp = Msg(READ_RESP, m.bookie, have[0] if have else NIL, fence=m.fence)
                fenced = self.set_at(s.b_fenced, i, True) if m.fence is True else s.b_fenced
                for d in self.processed_and_send(msgs, m, resp):
                    yield self.mk(s, d, b_fenced=fenced)

    def W1CreatesLedger(self, s, msgs):
        if s.meta_status is NIL and s.w1.meta_version is NIL:
            f = Fragment(1, self.select_ensemble(s, frozenset(), frozenset()), 1)
            w1 = s.w1._replace(status=OPEN, meta_version=1, curr_fragment=f)
            yield self.mk(s, w1=w1, meta_status=OPEN, meta_version=1, meta_fragments=s.meta_fragments + (f,))

    def W1SendsAddEntryRequests(self, s, msgs):
        w = s.w1
        if w.status == OPEN and w.lap + 1 <= self.SL:
            e = Entry(w.lap + 1, w.lap + 1)
            for d in self.send_to_ensemble(msgs, self.add_requests(w, e, w.curr_fragment.ensemble, False)):
                op = Op(e, w.curr_fragment.id, w.curr_fragment.ensemble)
                yield self.mk(s, d, w1=w._replace(lap=e.id, pending_add_ops=w.pending_add_ops | {op}))

    def max_contiguous(self, confirmed):
        best = 0
        for i in range(1, self.SL + 1):
            if all(len(confirmed[j - 1]) >= self.AQ for j in range(1, i + 1)):
                best = i
        return best

    def receive_add_confirmed(self, s, msgs, w, recovery):
        for m in msgs:
            if not (self.receivable(msgs, m, ADD_RESP) and self.is_earliest(msgs, m) and m.recovery == recovery
                    and m.success is True and m.bookie in w.curr_fragment.ensemble):
                continue
            k = m.entry.id - 1
            confirmed = self.set_at(w.confirmed, k, w.confirmed[k] | {m.bookie})
            lac = self.max_contiguous(confirmed)
            pending = frozenset(op for op in w.pending_add_ops
                                if len(confirmed[op.entry.id - 1]) < self.AQ or op.entry.id > lac)
            yield w._replace(confirmed=confirmed, lac=lac if lac > w.lac else w.lac, pending_add_ops=pending), \
                self.processed(msgs, m)

    def W1ReceivesAddConfirmedResponse(self, s, msgs):
        if s.w1.status == OPEN:
            for w, d in self.receive_add_confirmed(s, msgs, s.w1, False):
                yield self.mk(s, d, w1=w)

    def W1ReceivesAddFencedResponse(self, s, msgs):
        w = s.w1
        if w.status != OPEN:
            return
        for m in msgs:
            if (self.receivable(msgs, m, ADD_RESP) and self.is_earliest(msgs, m) and m.recovery is False
                    and m.success is False and m.bookie in w.curr_fragment.ensemble):
                yield self.mk(s, self.processed(msgs, m), w1=w._replace(status=NIL))

    @staticmethod
    def no_pending_resends(w):
        return not any(op.fragment_id != w.curr_fragment.id or op.ensemble != w.curr_fragment.ensemble
                       for op in w.pending_add_ops)

    @staticmethod
    def valid_next_fragment(s, first):
        return not any(f.first_entry_id > first for f in s.meta_fragments)

    def change_ensemble(self, s, msgs, w, recovery):
        if not (self.no_pending_resends(w) and w.meta_version == s.meta_version):
            return
        for b in sorted(w.curr_fragment.ensemble):
            inc, exc = w.curr_fragment.ensemble - {b}, frozenset({b})
            # TLC generates the step once for each witness of WriteTimeoutForBookie's and of
            # EnsembleAvailable's \E (docs/generated-counts.md)
            copies = self.write_timeouts(msgs, b, recovery) * sum(1 for _ in self.ensembles(s, inc, exc))
            if not (copies and self.valid_next_fragment(s, w.lac + 1)):
                continue
            new_ens = self.select_ensemble(s, inc, exc)
            first = w.lac + 1
            if first == w.curr_fragment.first_entry_id:
                last = s.meta_fragments[-1]
                frags = tuple(f._replace(ensemble=new_ens) if f == last else f for f in s.meta_fragments)
            else:
                frags = s.meta_fragments + (Fragment(len(s.meta_fragments) + 1, new_ens, first),)
            confirmed = tuple(c - {b} if i + 1 >= first else c for i, c in enumerate(w.confirmed))
            nw = w._replace(meta_version=s.meta_version + 1, confirmed=confirmed, curr_fragment=frags[-1])
            d = {m: (0 if m.type in (ADD_REQ, ADD_RESP) and m.bookie == b and m.recovery == recovery
                     and c == -1 else c) for m, c in msgs.items()}
            for _ in range(copies):
                yield nw, d, frags

    def W1ChangesEnsemble(self, s, msgs):
        if s.w1.status == OPEN and s.meta_status == OPEN:
            for w, d, frags in self.change_ensemble(s, msgs, s.w1, False):
                yield self.mk(s, d, w1=w, meta_fragments=frags, meta_version=s.meta_version + 1)

    def invalid_change(self, s, msgs, w, recovery):
        if not (self.no_pending_resends(w) and w.meta_version == s.meta_version):
            return
        for b in sorted(w.curr_fragment.ensemble):
            inc, exc = w.curr_fragment.ensemble - {b}, frozenset({b})
            copies = self.write_timeouts(msgs, b, recovery) * sum(1 for _ in self.ensembles(s, inc, exc))
            if not self.valid_next_fragment(s, w.lac + 1):
                for _ in range(copies):
                    yield w._replace(status=INVALID)

    def W1TriesInvalidEnsembleChange(self, s, msgs):
        if s.w1.status == OPEN and s.meta_status == OPEN:
            for w in self.invalid_change(s, msgs, s.w1, False):
                yield self.mk(s, w1=w)

    def send_pending(self, s, msgs, w, recovery):
        cf = w.curr_fragment
        for op in w.pending_add_ops:
            # \/ op.fragment_id # ... \/ op.ensemble # ...: once for each disjunct that holds
            for _ in range((op.fragment_id != cf.id) + (op.ensemble != cf.ensemble)):
                yield from self._send_pending_op(msgs, w, op, cf, recovery)

    def _send_pending_op(self, msgs, w, op, cf, recovery):
        if any(o2.fragment_id == op.fragment_id and o2.ensemble == op.ensemble and o2.entry.id < op.entry.id
               for o2 in w.pending_add_ops):
            return
        new_bookies = cf.ensemble - op.ensemble
        pending = frozenset(Op(o.entry, cf.id, cf.ensemble) if o == op else o for o in w.pending_add_ops)
        for d in self.send_to_ensemble(msgs, self.add_requests(w, op.entry, new_bookies, recovery)):
            yield w._replace(pending_add_ops=pending), d

    def W1SendsPendingAddOp(self, s, msgs):
        if s.w1.status == OPEN:
            for w, d in self.send_pending(s, msgs, s.w1, False):
                yield self.mk(s, d, w1=w)

    def W1CloseLedgerSuccess(self, s, msgs):
        w = s.w1
        if w.meta_version == s.meta_version and w.status == OPEN and s.meta_status == OPEN:
            yield self.mk(s, w1=w._replace(meta_version=w.meta_version + 1, status=CLOSED),
                          meta_status=CLOSED, meta_last_entry=w.lac, meta_version=s.meta_version + 1)

    def W1CloseLedgerFail(self, s, msgs):
        w = s.w1
        if w.meta_version != s.meta_version and w.status == OPEN and s.meta_status != OPEN:
            yield self.mk(s, w1=w._replace(meta_version=NIL))

    def W2PlaceInRecovery(self, s, msgs):
        w = s.w2
        if w.status is NIL and s.meta_status == OPEN:
            cur = s.meta_fragments[-1]
            nw = w._replace(status=IN_RECOVERY, meta_version=s.meta_version + 1, recovery_phase=FENCING,
                            curr_fragment=cur)
            for d in self.send_to_ensemble(msgs, {Msg(FENCE_REQ, b) for b in cur.ensemble}):
                yield self.mk(s, d, w2=nw, meta_status=IN_RECOVERY, meta_version=s.meta_version + 1)

    def W2ReceivesFencingReadLacResponse(self, s, msgs):
        w = s.w2
        not_started = not any(m.type == READ_REQ for m in msgs)
        for m in msgs:
            if self.receivable(msgs, m, FENCE_RESP):
                lac = max(m.lac, w.curr_fragment.first_entry_id - 1)
                take = not_started and lac > w.lac
                nw = w._replace(fenced=w.fenced | {m.bookie}, lac=lac if take else w.lac,
                                lap=lac if take else w.lap)
                yield self.mk(s, self.processed(msgs, m), w2=nw)

    def W2SendsReadRequests(self, s, msgs):
        w = s.w2
        if w.status != IN_RECOVERY:
            return
        ens = w.curr_fragment.ensemble if w.curr_fragment else frozenset()
        quorums_fenced = all(w.fenced & set(q) for q in itertools.combinations(sorted(ens), self.AQ))
        if not (w.recovery_phase == READ or (w.recovery_phase == FENCING and quorums_fenced)):
            return
        nid = w.lap + 1
        if any(m.type == READ_REQ and m.entry_id == nid for m in msgs):
            return
        reqs = {Msg(READ_REQ, b, entry_id=nid, fence=self.RRF)
                for b in self.fragment_of_entry_id(s, nid).ensemble}
        for d in self.send_to_ensemble(msgs, reqs):
            yield self.mk(s, d, w2=w._replace(recovery_phase=PENDING_READ))

    def read_outcome(self, s, msgs, m):
        w = s.w2
        ens = self.fragment_of_entry_id(s, m.entry.id).ensemble if m.entry is not NIL else frozenset()
        has = w.has_entry | {m.bookie} if m.entry is not NIL else w.has_entry
        nse = w.no_such_entry | {m.bookie} if m.entry is NIL else w.no_such_entry
        all_in = len(has) + len(nse) + self.read_timeout_count(msgs, ens) == self.WQ
        fenced = w.fenced | {m.bookie} if m.fence is True else w.fenced
        return ens, has, nse, all_in, fenced

    @staticmethod
    def clear_read_timeouts(msgs, m, ens):
        return {k: (0 if k == m else 0 if (k.bookie in ens and k.type in (READ_REQ, READ_RESP) and c == -1) else c)
                for k, c in msgs.items()}

    def W2ReceivesNonFinalRead(self, s, msgs):
        w = s.w2
        for m in msgs:
            if self.receivable(msgs, m, READ_RESP):
                ens, has, nse, all_in, fenced = self.read_outcome(s, msgs, m)
                if not all_in:
                    nw = w._replace(has_entry=has, no_such_entry=nse, fenced=fenced,
                                    curr_read_entry=m.entry if m.entry is not NIL else w.curr_read_entry)
                    yield self.mk(s, self.processed(msgs, m), w2=nw)

    def W2CompletesReadSuccessfully(self, s, msgs):
        w = s.w2
        for m in msgs:
            if self.receivable(msgs, m, READ_RESP):
                ens, has, nse, all_in, fenced = self.read_outcome(s, msgs, m)
                if all_in and len(has) >= self.AQ:
                    data = w.curr_read_entry.data if m.entry is NIL else m.entry.data
                    op = Op(Entry(w.lap + 1, data), w.curr_fragment.id, w.curr_fragment.ensemble)
                    nw = w._replace(has_entry=frozenset(), no_such_entry=frozenset(), curr_read_entry=NIL,
                                    fenced=fenced, lap=w.lap + 1, pending_add_ops=w.pending_add_ops | {op},
                                    recovery_phase=READ)
                    yield self.mk(s, self.clear_read_timeouts(msgs, m, ens), w2=nw)

    def W2CompletesReadWithNoSuchEntry(self, s, msgs):
        w = s.w2
        for m in msgs:
            if self.receivable(msgs, m, READ_RESP):
                ens, has, nse, all_in, fenced = self.read_outcome(s, msgs, m)
                if all_in and len(nse) >= self.WQ - self.AQ + 1:
                    nw = w._replace(has_entry=frozenset(), no_such_entry=frozenset(), curr_read_entry=NIL,
                                    fenced=fenced, recovery_phase=WRITE)
                    yield self.mk(s, self.clear_read_timeouts(msgs, m, ens), w2=nw)

    def W2WritesBackEntry(self, s, msgs):
        w = s.w2
        if not (w.status == IN_RECOVERY and w.recovery_phase == WRITE):
            return

        def not_sent(op):
            return not any(m.type == ADD_REQ and m.recovery is True and m.entry == op.entry for m in msgs)

        for op in w.pending_add_ops:
            if not_sent(op) and not any(not_sent(o2) and o2.entry.id < op.entry.id for o2 in w.pending_add_ops):
                for d in self.send_to_ensemble(msgs, self.add_requests(w, op.entry, w.curr_fragment.ensemble, True)):
                    yield self.mk(s, d)

    def W2ReceivesAddConfirmedResponse(self, s, msgs):
        if s.w2.status == IN_RECOVERY:
            for w, d in self.receive_add_confirmed(s, msgs, s.w2, True):
                yield self.mk(s, d, w2=w)

    def W2ChangesEnsemble(self, s, msgs):
        if s.w2.status == IN_RECOVERY and s.meta_status == IN_RECOVERY:
            for w, d, frags in self.change_ensemble(s, msgs, s.w2, True):
                yield self.mk(s, d, w2=w, meta_fragments=frags, meta_version=s.meta_version + 1)

    def W2TriesInvalidEnsembleChange(self, s, msgs):
        if s.w2.status == IN_RECOVERY and s.meta_status == IN_RECOVERY:
            for w in self.invalid_change(s, msgs, s.w2, True):
                yield self.mk(s, w2=w)

    def W2SendsPendingAddOp(self, s, msgs):
        if s.w2.status == IN_RECOVERY:
            for w, d in self.send_pending(s, msgs, s.w2, True):
                yield self.mk(s, d, w2=w)

    def W2ClosesLedger(self, s, msgs):
        w = s.w2
        if (s.meta_version == w.meta_version and s.meta_status == IN_RECOVERY and w.status == IN_RECOVERY
                and w.recovery_phase == WRITE and not w.pending_add_ops):
            yield self.mk(s, w2=w._replace(status=CLOSED, meta_version=w.meta_version + 1),
                          meta_version=s.meta_version + 1, meta_status=CLOSED, meta_last_entry=w.lac)

    # ---------------------------------------------------------------- invariants
    def invariant(self, name, s):
        if name == "TypeOK":
            return self.type_ok(s)
        if name == "OnlyValidFragments":
            return s.w1.status != INVALID and s.w2.status != INVALID
        if name == "NoOutOfOrderEntries":
            return all(e.id == e.data for es in s.b_entries for e in es)
        if name == "NoDivergenceBetweenWriterAndMetaData":
            return s.meta_status != CLOSED or all(i <= s.meta_last_entry for i in range(1, s.w1.lac + 1))
        if name == "AllCommittedEntriesReachAckQuorum":
            if s.meta_status != CLOSED or s.meta_last_entry <= 0:
                return True
            for i in range(1, s.meta_last_entry + 1):
                f = self.fragment_of_entry_id(s, i)
                if sum(1 for b in f.ensemble if any(e.id == i for e in s.b_entries[self.bi[b]])) < self.AQ:
                    return False
            return True
        raise KeyError(name)

    def type_ok(self, s):
        B = set(self.B)

        def entry_ok(e):
            return 1 <= e.id <= self.SL and (e.data is NIL or 1 <= e.data <= self.SL)

        def frag_ok(f):
            return f.id >= 0 and f.ensemble <= B and f.first_entry_id >= 0

        def writer_ok(w):
            return ((w.meta_version is NIL or w.meta_version >= 0)
                    and w.status in (NIL, OPEN, IN_RECOVERY, CLOSED, INVALID)
                    and (w.curr_fragment is NIL or frag_ok(w.curr_fragment))
                    and all(entry_ok(o.entry) and o.fragment_id >= 0 and o.ensemble <= B for o in w.pending_add_ops)
                    and w.lap >= 0 and w.lac >= 0 and len(w.confirmed) == self.SL
                    and all(c <= B for c in w.confirmed) and w.fenced <= B
                    and (w.curr_read_entry is NIL or entry_ok(w.curr_read_entry))
                    and w.has_entry <= B and w.no_such_entry <= B and 0 <= w.recovery_phase <= WRITE)

        return (s.meta_status in (NIL, OPEN, IN_RECOVERY, CLOSED) and s.meta_last_entry >= 0
                and s.meta_version >= 0 and all(entry_ok(e) for es in s.b_entries for e in es)
                and all(x >= 0 for x in s.b_lac) and writer_ok(s.w1) and writer_ok(s.w2))


ACTIONS = [
    "BookieSendsAddConfirmedResponse", "BookieSendsAddFencedResponse", "BookieSendsFencingReadLacResponse",
    "BookieSendsReadResponse", "W1CreatesLedger", "W1SendsAddEntryRequests", "W1ReceivesAddConfirmedResponse",
    "W1ReceivesAddFencedResponse", "W1ChangesEnsemble", "W1TriesInvalidEnsembleChange", "W1SendsPendingAddOp",
    "W1CloseLedgerSuccess", "W1CloseLedgerFail", "W2PlaceInRecovery", "W2ReceivesFencingReadLacResponse",
    "W2SendsReadRequests", "W2ReceivesNonFinalRead", "W2CompletesReadSuccessfully",
    "W2CompletesReadWithNoSuchEntry", "W2WritesBackEntry", "W2ReceivesAddConfirmedResponse",
    "W2ChangesEnsemble", "W2TriesInvalidEnsembleChange", "W2SendsPendingAddOp", "W2ClosesLedger",
]


def bfs(bookies, wq, aq, send_limit, rrf, *, deadlock=False, invariants=INVARIANTS, max_states=None):
    """TLC-style breadth-first search; returns result, figures and, on an error, the trace's actions."""
    spec = Spec(bookies, wq, aq, send_limit, rrf)
    init = spec.init()
    parent = {init: (None, "Init")}
    frontier, generated, depth = [init], 1, 1

    def trace(s):
        acts = []
        while s is not None:
            p, a = parent[s]
            acts.append(a)
            s = p
        return acts[::-1]

    for name in invariants:
        if not spec.invariant(name, init):
            return {"result": "invariant_violated", "violated_invariant": name, "trace": ["Init"]}
    while frontier:
        nxt = []
        for s in frontier:
            succ = spec.successors(s)
            if not succ and deadlock:
                return {"result": "deadlock", "trace": trace(s), "distinct": len(parent)}
            for a, t in succ:
                generated += 1
                if t in parent:
                    continue
                parent[t] = (s, a)
                for name in invariants:
                    if not spec.invariant(name, t):
                        return {"result": "invariant_violated", "violated_invariant": name, "trace": trace(t),
                                "state": t}
                nxt.append(t)
        if nxt:
            depth += 1
        frontier = nxt
        if max_states and len(parent) > max_states:
            raise RuntimeError("state space larger than max_states")
    return {"result": "ok", "distinct": len(parent), "generated": generated, "depth": depth}


if __name__ == "__main__":
    import json
    args = dict(a.split("=", 1) for a in sys.argv[1:])
    res = bfs(args.get("Bookies", "b1,b2,b3").split(","), int(args.get("WriteQuorum", 3)),
              int(args.get("AckQuorum", 2)), int(args.get("SendLimit", 1)),
              args.get("RecoveryReadsFence", "FALSE") == "TRUE", deadlock=args.get("deadlock", "0") == "1")
    res.pop("state", None)
    print(json.dumps(res))


# -------------------------------------------------------------------- rows of the engine's tables
# The engine's encoding (schemas/bookkeeper_v4_13.yml): 'Nil' for a status, NULL for other Nils,
# sets as sorted lists, functions over Bookies as lists in the order of Bookies.

def _frag_row(f):
    return None if f is NIL else {"id": f.id, "ensemble": sorted(f.ensemble), "first_entry_id": f.first_entry_id}


def _entry_row(e):
    return None if e is NIL else {"id": e.id, "data": e.data}


def _writer_row(w):
    return {
        "meta_version": w.meta_version, "status": "Nil" if w.status is NIL else w.status,
        "curr_fragment": _frag_row(w.curr_fragment),
        "pending_add_ops": sorted(({"entry": _entry_row(o.entry), "fragment_id": o.fragment_id,
                                    "ensemble": sorted(o.ensemble)} for o in w.pending_add_ops),
                                  key=lambda d: (d["entry"]["id"], d["entry"]["data"], d["fragment_id"], d["ensemble"])),
        "lap": w.lap, "lac": w.lac, "confirmed": [sorted(c) for c in w.confirmed], "fenced": sorted(w.fenced),
        "curr_read_entry": _entry_row(w.curr_read_entry), "has_entry": sorted(w.has_entry),
        "no_such_entry": sorted(w.no_such_entry), "recovery_phase": w.recovery_phase,
    }


def _msg_row(m):
    d = m._asdict()
    d["entry"] = _entry_row(m.entry)
    return d


def to_row(s):
    """A state as a row of the engine's states table (a dict of the model's variables)."""
    return {
        "meta_status": "Nil" if s.meta_status is NIL else s.meta_status,
        "meta_fragments": [_frag_row(f) for f in s.meta_fragments],
        "meta_last_entry": s.meta_last_entry, "meta_version": s.meta_version,
        "b_entries": [sorted((_entry_row(e) for e in es), key=lambda d: (d["id"], d["data"])) for es in s.b_entries],
        "b_fenced": list(s.b_fenced), "b_lac": list(s.b_lac),
        "w1": _writer_row(s.w1), "w2": _writer_row(s.w2),
        "messages": [{"msg": _msg_row(m), "count": c} for m, c in sorted(s.messages, key=lambda mc: repr(mc))],
    }


def _frag(d):
    return NIL if d is None else Fragment(d["id"], frozenset(d["ensemble"]), d["first_entry_id"])


def _entry(d):
    return NIL if d is None else Entry(d["id"], d["data"])


def _writer(d):
    return Writer(d["meta_version"], None if d["status"] == "Nil" else d["status"], _frag(d["curr_fragment"]),
                  frozenset(Op(_entry(o["entry"]), o["fragment_id"], frozenset(o["ensemble"]))
                            for o in d["pending_add_ops"]),
                  d["lap"], d["lac"], tuple(frozenset(c) for c in d["confirmed"]), frozenset(d["fenced"]),
                  _entry(d["curr_read_entry"]), frozenset(d["has_entry"]), frozenset(d["no_such_entry"]),
                  d["recovery_phase"])


def from_row(d):
    """The state a row of the engine's tables (a dict, nested structs as dicts) stands for."""
    msgs = frozenset((Msg(**{**x["msg"], "entry": _entry(x["msg"]["entry"])}), x["count"]) for x in d["messages"])
    return State(None if d["meta_status"] == "Nil" else d["meta_status"],
                 tuple(_frag(f) for f in d["meta_fragments"]), d["meta_last_entry"], d["meta_version"],
                 tuple(frozenset(_entry(e) for e in es) for es in d["b_entries"]), tuple(d["b_fenced"]),
                 tuple(d["b_lac"]), _writer(d["w1"]), _writer(d["w2"]), msgs)


def reachable(bookies, wq, aq, send_limit, rrf):
    """Every reachable state, in breadth-first order (for a one-step check of the SQL actions)."""
    spec = Spec(bookies, wq, aq, send_limit, rrf)
    init = spec.init()
    seen, order, frontier = {init}, [init], [init]
    while frontier:
        nxt = []
        for s in frontier:
            for _, t in spec.successors(s):
                if t not in seen:
                    seen.add(t)
                    order.append(t)
                    nxt.append(t)
        frontier = nxt
    return spec, order


# -------------------------------------------------------------------- TLC's printed traces
import re as _re

_TOKEN = _re.compile(r"\s*(<<|>>|\|->|:>|@@|-?\d+|[A-Za-z_][A-Za-z0-9_]*|[\[\]{}(),])")


def _tokens(text):
    pos, out = 0, []
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            if text[pos:].strip() == "":
                break
            raise ValueError(f"cannot read TLA+ value at {text[pos:pos + 30]!r}")
        out.append(m.group(1))
        pos = m.end()
    return out


def parse_value(text):
    """A TLA+ value as TLC prints it: records -> dict, functions (k :> v @@ ...) -> dict,
    sets -> frozenset, sequences -> tuple, TRUE/FALSE -> bool, other names -> str."""
    toks = _tokens(text)
    i = 0

    def value():
        nonlocal i
        t = toks[i]
        i += 1
        if t == "<<":
            items = []
            while toks[i] != ">>":
                items.append(value())
                if toks[i] == ",":
                    i += 1
            i += 1
            return tuple(items)
        if t == "{":
            items = []
            while toks[i] != "}":
                items.append(value())
                if toks[i] == ",":
                    i += 1
            i += 1
            return frozenset(items)
        if t == "[":
            rec = {}
            while toks[i] != "]":
                k = toks[i]
                assert toks[i + 1] == "|->"
                i += 2
                rec[k] = value()
                if toks[i] == ",":
                    i += 1
            i += 1
            return _Rec(rec)
        if t == "(":
            fn = {}
            while toks[i] != ")":
                k = value()
                assert toks[i] == ":>"
                i += 1
                fn[k] = value()
                if toks[i] == "@@":
                    i += 1
            i += 1
            return fn
        if t in ("TRUE", "FALSE"):
            return t == "TRUE"
        if _re.fullmatch(r"-?\d+", t):
            return int(t)
        return t

    v = value()
    assert i == len(toks), f"trailing text after a TLA+ value: {toks[i:i + 5]}"
    return v


class _Rec(dict):
    """A record: a dict that can be a set element or a function's argument."""

    def __hash__(self):
        return hash(tuple(sorted(self.items(), key=lambda kv: kv[0])))


def _nil(v):
    return NIL if v == "Nil" else v


def _tlc_entry(v):
    return NIL if v == "Nil" else Entry(v["id"], _nil(v["data"]))


def _tlc_frag(v):
    return NIL if v == "Nil" else Fragment(v["id"], frozenset(v["ensemble"]), v["first_entry_id"])


def _tlc_writer(v):
    return Writer(_nil(v["meta_version"]), _nil(v["status"]), _tlc_frag(v["curr_fragment"]),
                  frozenset(Op(_tlc_entry(o["entry"]), o["fragment_id"], frozenset(o["ensemble"]))
                            for o in v["pending_add_ops"]),
                  v["lap"], v["lac"], tuple(frozenset(c) for c in v["confirmed"]), frozenset(v["fenced"]),
                  _tlc_entry(v["curr_read_entry"]), frozenset(v["has_entry"]), frozenset(v["no_such_entry"]),
                  v["recovery_phase"])


def _tlc_msg(v):
    fields = {k: v[k] for k in v}
    if "entry" in fields:
        fields["entry"] = _tlc_entry(fields["entry"])
    return Msg(**fields)


def parse_tlc_trace(path, bookies):
    """[(action, State)] from a counterexample as TLC prints it (every state in full)."""
    text = open(path).read()
    steps = []
    for block in _re.split(r"\nState \d+: ", "\n" + text[text.index("State 1: "):])[1:]:
        head, _, body = block.partition("\n")
        action = "Init" if "Initial predicate" in head else head.strip("<").split()[0]
        vars_ = {}
        for part in _re.split(r"\n/\\ ", "\n" + body.strip())[1:]:
            name, _, val = part.partition(" = ")
            vars_[name.strip()] = parse_value(val)
        msgs = vars_["messages"]
        msgs = {} if msgs == () else msgs
        state = State(
            _nil(vars_["meta_status"]), tuple(_tlc_frag(f) for f in vars_["meta_fragments"]),
            vars_["meta_last_entry"], vars_["meta_version"],
            tuple(frozenset(_tlc_entry(e) for e in vars_["b_entries"][b]) for b in sorted(bookies)),
            tuple(vars_["b_fenced"][b] for b in sorted(bookies)), tuple(vars_["b_lac"][b] for b in sorted(bookies)),
            _tlc_writer(vars_["w1"]), _tlc_writer(vars_["w2"]),
            frozenset((_tlc_msg(m), c) for m, c in msgs.items()))
        steps.append((action, state))
    return steps
