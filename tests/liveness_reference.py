"""An independent check of liveness properties on a small explicit graph, for tests/test_liveness.py.

It shares no code with engine.search.liveness and decides by brute force: a behavior that violates a
property under some fairness either ends stuttering for ever in one state, or ends going round a
strongly connected set of states S, taking every step within S infinitely often (the fairest way to
stay in S). So a violation exists exactly when some reachable "end" does: a state, or a set S that is
strongly connected through its steps (every subset of every strongly connected component is tried),
that meets the fairness conditions and the property's. The module also says whether a given lasso is a
behavior that violates a property under some fairness (``lasso_violates``).

The graph is the counter with cycles (tests/models/schemas/counter_live.yml), enumerated here in Python.
"""
from __future__ import annotations

from itertools import combinations

State = tuple[int, tuple[int, ...]]


def counter_live_graph(steps=(1, 2), max_=3, jump_from=1) -> tuple[State, dict[State, set[tuple[State, str]]]]:
    """The initial state and every reachable state's steps (successor, action)."""
    init: State = (0, (0,))
    succ: dict[State, set[tuple[State, str]]] = {}
    todo = [init]
    while todo:
        s = todo.pop()
        if s in succ:
            continue
        x, visited = s
        out = set()
        for d in steps:
            if x + d <= max_:
                out.add(((x + d, tuple(sorted(set(visited) | {x + d}))), "Step"))
        if x == max_:
            out.add(((0, visited), "Reset"))
        if jump_from <= x < max_:
            out.add(((max_, tuple(sorted(set(visited) | {max_}))), "Jump"))
        succ[s] = out
        todo += [t for t, _ in out]
    return init, succ


def _sccs(nodes: set, edges: dict) -> list[set]:
    """Tarjan's strongly connected components of ``nodes`` over ``edges`` (node -> successors)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in nodes:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            out.append(comp)

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


class Checker:
    def __init__(self, init: State, succ: dict[State, set[tuple[State, str]]]):
        self.init, self.succ = init, succ
        # Steps that change the state; a step to itself is stuttering.
        self.real = {s: {(t, a) for t, a in out if t != s} for s, out in succ.items()}

    def enabled(self, s: State, action: str | None) -> bool:
        return any(action is None or a == action for _, a in self.real[s])

    def fair_stutter(self, s: State, fairness: list[str]) -> bool:
        """Stuttering for ever in ``s`` is fair: no fair action (nor Next, under weak/strong) is enabled."""
        for f in fairness:
            _, _, action = f.partition(":")
            if self.enabled(s, action or None):
                return False
        return True

    def fair_cycle(self, states: set[State], steps: set[tuple[State, State, str]], fairness: list[str]) -> bool:
        """Going round ``states`` taking ``steps`` (all of them, infinitely often) is fair."""
        for f in fairness:
            kind, _, action = f.partition(":")
            if not action:
                continue  # a cycle takes steps of Next infinitely often
            taken = any(a == action for _, _, a in steps)
            if taken:
                continue
            if kind == "weak" and all(self.enabled(s, action) for s in states):
                return False
            if kind == "strong" and any(self.enabled(s, action) for s in states):
                return False
        return True

    def _reachable(self, sources: set[State], within: set[State]) -> set[State]:
        seen, todo = set(), [s for s in sources if s in within]
        while todo:
            s = todo.pop()
            if s in seen:
                continue
            seen.add(s)
            todo += [t for t, _ in self.real[s] if t in within]
        return seen

    def ends(self, region: set[State], fairness: list[str], buchi=None) -> set[State]:
        """The states of ``region`` where a fair behavior can end staying in it: states where it may
        stutter for ever, and the states of every fair strongly connected set within it (the brute
        force: every subset of every strongly connected component). ``buchi``: the end must meet a
        state where it holds (<>[]P's not P)."""
        out = {s for s in region if self.fair_stutter(s, fairness) and (buchi is None or buchi(s))}
        edges = {s: {t for t, _ in self.real[s]} for s in region}
        for comp in _sccs(region, edges):
            members = sorted(comp)
            assert len(members) <= 14, "the brute force is for small components"
            for k in range(1, len(members) + 1):
                for sub in combinations(members, k):
                    sset = set(sub)
                    steps = {(s, t, a) for s in sset for t, a in self.real[s] if t in sset}
                    if not steps:
                        continue
                    if len(_sccs(sset, {s: {t for (u, t, _) in steps if u == s} for s in sset})) != 1:
                        continue
                    if buchi is not None and not any(buchi(s) for s in sset):
                        continue
                    if self.fair_cycle(sset, steps, fairness):
                        out |= sset
        return out

    def can_avoid_forever(self, region: set[State], fairness: list[str], buchi=None) -> set[State]:
        """States of ``region`` from which a fair behavior stays in it for ever (meeting buchi)."""
        ends = self.ends(region, fairness, buchi)
        back = {s: set() for s in region}
        for s in region:
            for t, _ in self.real[s]:
                if t in region:
                    back[t].add(s)
        seen, todo = set(), list(ends)
        while todo:
            s = todo.pop()
            if s in seen:
                continue
            seen.add(s)
            todo += list(back[s])
        return seen

    def verdict(self, form: str, p, q=None, fairness=()) -> tuple[bool, int]:
        """(holds, bad states) as engine.search.liveness counts them."""
        fairness = list(fairness)
        states = set(self.succ)
        if form == "AG EF":
            good = {s for s in states if p(s)}
            back = {s: set() for s in states}
            for s in states:
                for t, _ in self.real[s]:
                    back[t].add(s)
            seen, todo = set(), list(good)
            while todo:
                s = todo.pop()
                if s not in seen:
                    seen.add(s)
                    todo += list(back[s])
            doomed = states - seen
            return not doomed, len(doomed)
        if form in ("<>", "[]<>"):
            region = {s for s in states if not p(s)}
            bad = self.can_avoid_forever(region, fairness)
            if form == "<>":
                bad &= self._reachable({self.init}, region)
        elif form == "~>":
            region = {s for s in states if not q(s)}
            bad = {s for s in self.can_avoid_forever(region, fairness) if p(s)}
        else:  # <>[]
            bad = self.can_avoid_forever(states, fairness, buchi=lambda s: not p(s))
        return not bad, len(bad)

    def lasso_violates(self, form: str, p, q, fairness, states: list[State], actions: list[str], loop: int,
                       loop_action: str | None) -> str | None:
        """Why the lasso ``states`` (then back to states[loop] by loop_action, or stuttering when
        loop_action is None and loop is the last index) is not a fair behavior violating the property;
        None when it is one."""
        if states[0] != self.init:
            return "does not start in the initial state"
        for i in range(1, len(states)):
            if (states[i], actions[i]) not in self.succ[states[i - 1]]:
                return f"step {i} ({actions[i]}) is not a step of the model"
        if loop_action is None:
            if loop != len(states) - 1:
                return "stuttering, but the loop is not the last state"
            cycle, steps = {states[-1]}, set()
            if not self.fair_stutter(states[-1], list(fairness)):
                return "stutters for ever where a fair action is enabled"
        else:
            if (states[loop], loop_action) not in self.succ[states[-1]]:
                return "the step closing the cycle is not a step of the model"
            cycle = set(states[loop:])
            pairs = {(states[i - 1], states[i]) for i in range(loop + 1, len(states))} | {(states[-1], states[loop])}
            # A step is a step of every action that allows it, whatever the trace names it.
            steps = {(u, v, a) for u, v in pairs for t, a in self.succ[u] if t == v and u != v}
            if not steps or not self.fair_cycle(cycle, steps, list(fairness)):
                return "the cycle is not fair"
        word, rep = states, states[loop:]
        if form == "<>":
            return None if not any(p(s) for s in word) else "P holds on the lasso"
        if form == "[]<>":
            return None if not any(p(s) for s in rep) else "P holds on the cycle"
        if form == "<>[]":
            return None if any(not p(s) for s in rep) else "P holds all along the cycle"
        if form == "~>":
            for i, s in enumerate(word):
                if p(s) and not any(q(t) for t in word[i:]) and not any(q(t) for t in rep):
                    return None
            return "every P is followed by Q"
        return f"form {form}"
