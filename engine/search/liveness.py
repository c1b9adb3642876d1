"""Stage: liveness. Temporal properties checked after the search, over the run's stored tables: the
reachable states (``states``) and the state graph's edges (``edges``), as Spark DataFrame fixpoints.
No graph is held on the driver: it keeps a few counts per iteration and, at the end, the states of one
counterexample.

A property is one of five forms over state predicates P and Q (boolean SQL over one state):

- ``<>P``, ``[]<>P``, ``<>[]P``, ``P ~> Q`` (TLA+'s ``[](P => <>Q)``): linear-time, checked for every
  behavior of the specification under the run's fairness; a violation is a lasso (a path from an
  initial state, then a cycle, or a state that stutters for ever);
- ``AG EF P`` (CTL): every reachable state can still reach a state where P holds. No fairness is
  involved; a violation is the set of "doomed" states, with a shortest path to one.

Behaviors follow TLA+: every state may stutter, a step that leaves the state unchanged (an edge from a
state to itself) is a stuttering step, and a terminal state stutters for ever. Fairness:

- none: a behavior may stutter for ever in any state;
- ``weak`` (WF_vars(Next)): it may stutter for ever only where <<Next>>_vars is disabled (the state has
  no successor but itself); otherwise it takes infinitely many steps. ``strong`` (SF_vars(Next)) is the
  same on a finite graph;
- ``weak:A`` / ``strong:A`` (WF_vars(A) / SF_vars(A) for one action of Next): a behavior that stays
  where <<A>>_vars is enabled for ever (weak), or returns there infinitely often (strong), takes A
  infinitely often.

The algorithms (U is the set of states where the behavior must stay: not P, or not Q):

- ``Fair(U)``, the states of U from which a fair behavior stays in U for ever. Without fairness it is
  U. Under WF_vars(Next) alone it is the greatest fixpoint ``X = U ∩ (Stuck ∪ pre(X))`` (iterative
  trimming of the states whose every step leaves X). With fairness of actions it is the backward
  closure, within U, of the states of U where stuttering for ever is fair and of the fair strongly
  connected components of U: SCCs by the coloring algorithm (forward propagation of the smallest key
  over the edges, then backward reachability within each color from its root), a component fair when
  it has a step, and for each fair action a step of it or (weak) a state where it is disabled;
  strong fairness refines a component without a step of A by removing the states where A is
  enabled, and decomposes the rest again (Streett emptiness).
- ``[]<>P`` is violated where ``Fair(not P)`` is not empty; ``<>P`` where it meets the states that
  an initial state reaches through states of not P; ``P ~> Q`` where it holds a state with P;
  ``<>[]P`` where a fair component holds a state of not P, or a state of not P may stutter for ever.
- ``AG EF P``: backward reachability from the states of P over every edge; the states it misses
  are doomed.

The counterexample: the path to its loop is a shortest one (the search's breadth-first tree, or a
breadth-first search within U for ``<>P``); the loop is stuttering where that is fair, otherwise a
cycle within the fair component through a step (or a disabled state) of every fair action and, for
``<>[]P``, a state of not P.
"""
from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from engine.errors import UsageError
from engine.model.loader import Property, RunSpec
from engine.runtime.session import interpreted, kept_observed
from engine.search.expand import CompiledModel
from engine.settings import Settings
from engine.store.deltaio import read_delta
from engine.store.runs import EDGES_SCHEMA, RunStore
from engine.version import __version__

__all__ = ["PropertyResult", "check_properties", "fairness_text", "property_digest"]

# A state's id in the stage: its depth and its position in the level (TLC's order), so that the
# smallest id is the first state a breadth-first search meets.
ORD_BITS = 40


@dataclass
class PropertyResult:
    name: str
    form: str
    fairness: list[str]
    holds: bool
    bad_states: int = 0                 # states from which the property can be violated (doomed, for AG EF)
    trace: list[dict[str, Any]] = field(default_factory=list)
    loop: int | None = None             # index in trace where the cycle starts (the last state: stuttering)
    loop_action: str | None = None      # the action of the step closing the cycle (None: stuttering)
    seconds: float = 0.0
    from_cache: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"form": self.form, "fairness": self.fairness, "holds": self.holds, "bad_states": self.bad_states,
                "trace": [{"action": t["action"], "state": t["state"]} for t in self.trace], "loop": self.loop,
                "loop_action": self.loop_action, "seconds": round(self.seconds, 3), "from_cache": self.from_cache}


def fairness_text(fairness: list[str]) -> str:
    """The fairness as TLA+ writes it: WF_vars(Next) /\\ SF_vars(A) ..."""
    if not fairness:
        return "no fairness"
    out = []
    for f in fairness:
        kind, _, action = f.partition(":")
        out.append(f"{'WF' if kind == 'weak' else 'SF'}_vars({action or 'Next'})")
    return " /\\ ".join(out)


def effective_fairness(prop: Property, fairness: list[str]) -> list[str]:
    """The run's fairness and the property's own (its formula's), once each; none for AG EF."""
    if prop.form == "AG EF":
        return []
    return list(dict.fromkeys([*prop.fairness, *fairness]))


def property_digest(prop: Property, fairness: list[str]) -> str:
    """What a stored result of this check depends on, beside the run: the property's file, its
    fairness and the engine's version."""
    payload = json.dumps({"text": prop.file.text, "fairness": fairness, "engine": __version__}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:24]


def check_properties(spark: SparkSession, spec: RunSpec, cm: CompiledModel, store: RunStore, settings: Settings,
                     variables: list[str], progress=None) -> list[PropertyResult]:
    """Check ``spec.properties`` over the run's stored tables (its edges must have been kept); a
    stored result of the same check is read back."""
    if not store.has_edges():
        raise UsageError(f"run {spec.run_id} kept no edges table: liveness properties need one (check it with "
                         f"--property, or --keep-edges, from the start)")
    results: list[PropertyResult] = []
    graph: Graph | None = None
    rows, _ = store.edges_size()
    partitions = spark.conf.get("spark.sql.shuffle.partitions")
    # The stage's jobs are many and small: a partition per rows_per_partition edges, and for a small
    # graph no generated code (compiling it costs more than it saves).
    spark.conf.set("spark.sql.shuffle.partitions",
                   str(max(1, min(int(partitions), -(-rows // settings.rows_per_partition)))))
    small = interpreted(spark, rows <= settings.interpret_below * 50)
    small.__enter__()
    adaptive = spark.conf.get("spark.sql.adaptive.enabled")
    if rows <= settings.rows_per_partition:
        # One partition: adaptive execution has nothing to coalesce and runs each shuffle as a job.
        spark.conf.set("spark.sql.adaptive.enabled", "false")
    try:
        for name in spec.properties:
            prop = spec.model.properties[name]
            fair = effective_fairness(prop, spec.fairness)
            digest = property_digest(prop, fair)
            stored = store.read_liveness(digest)
            if stored is not None:
                results.append(PropertyResult(name, prop.form, fair, stored["holds"], stored["bad_states"],
                                              json.loads(stored["trace"]), stored["loop"], stored["loop_action"],
                                              stored["seconds"], from_cache=True))
                continue
            t0 = time.time()
            if graph is None:
                graph = Graph(spark, spec, cm, store, settings, variables)
            res = graph.check(prop, cm.property_exprs[name], fair)
            res.seconds = time.time() - t0
            store.write_liveness({"property": name, "digest": digest, "form": prop.form, "fairness": json.dumps(fair),
                                  "holds": res.holds, "bad_states": res.bad_states,
                                  "trace": json.dumps(res.trace, default=str), "loop": res.loop,
                                  "loop_action": res.loop_action, "seconds": res.seconds})
            results.append(res)
            if progress is not None and hasattr(progress, "announce"):
                progress.announce(f"Property {name} ({prop.form}, {fairness_text(fair)}): "
                                  f"{'holds' if res.holds else 'violated'} ({res.seconds:.1f}s)")
    finally:
        if graph is not None:
            graph.close()
        small.__exit__(None, None, None)
        spark.conf.set("spark.sql.shuffle.partitions", partitions)
        spark.conf.set("spark.sql.adaptive.enabled", adaptive)
    return results


class Graph:
    """The run's state graph as DataFrames: ``nodes`` (one row per state: its id, depth, position,
    whether it is initial, its predicate columns, whether it is stuck and which fair actions it
    enables) and ``edges`` (src, dst, action; steps that change the state only)."""

    def __init__(self, spark: SparkSession, spec: RunSpec, cm: CompiledModel, store: RunStore, settings: Settings,
                 variables: list[str]):
        self.spark, self.spec, self.cm, self.store, self.settings = spark, spec, cm, store, settings
        self.variables = variables
        self.actions = cm.action_names
        self._held: list[DataFrame] = []
        self.states = read_delta(spark, str(store.states_path), store.spark_schema, settings).withColumn(
            "id", _id(F.col("_depth"), F.col("_ord")))
        ids = self._keep(self.states.select("id", "_fp", "_fp2"))
        raw = read_delta(spark, str(store.edges_path), None, settings).select(*EDGES_SCHEMA.names)
        src = ids.select(F.col("id").alias("src"), F.col("_fp").alias("_from_fp"), F.col("_fp2").alias("_from_fp2"))
        dst = ids.select(F.col("id").alias("dst"), F.col("_fp").alias("_to_fp"), F.col("_fp2").alias("_to_fp2"))
        # Steps that change the state (a step to itself is stuttering, never a step of <<A>>_vars).
        self.edges = self._keep(raw.join(src, ["_from_fp", "_from_fp2"]).join(dst, ["_to_fp", "_to_fp2"])
                                .where("src <> dst").select("src", "dst", "_action").distinct())
        self._nodes_by: dict[tuple[str, ...], DataFrame] = {}

    def close(self) -> None:
        for df in self._held:
            try:
                df.unpersist()
            except Exception:  # noqa: BLE001 - a session that is gone: nothing left to free
                pass
        self._held = []

    def _keep(self, df: DataFrame) -> DataFrame:
        """``df`` computed once (a local checkpoint: its plan cut, so a fixpoint's plans do not grow)."""
        kept = df.localCheckpoint(eager=True)
        self._held.append(kept)
        return kept

    def _kept_count(self, df: DataFrame, hit: Column | None = None) -> tuple[DataFrame, int, bool]:
        """``_keep(df)``, its rows and whether a row meets ``hit``, counted in the checkpoint's own job
        (observed metrics): one job an iteration of a fixpoint (two through Spark Connect)."""
        kept, read = kept_observed(df, self._keep, [F.count(F.lit(1)).alias("n"),
                                                    F.max(hit if hit is not None else F.lit(False)).alias("hit")])
        got = read()
        return kept, int(got["n"]), bool(got["hit"])

    # ---- the nodes, with the columns a check needs -----------------------------------------------
    def nodes(self, exprs: tuple[str, ...], fair_actions: tuple[str, ...]) -> DataFrame:
        """id, _depth, _ord, init, p0 (, p1), stuck, en_<i> for each fair action (its index in Next)."""
        key = (*exprs, "|", *fair_actions)
        if key in self._nodes_by:
            return self._nodes_by[key]
        preds = [F.coalesce(F.expr(e), F.lit(False)).alias(f"p{i}") for i, e in enumerate(exprs)]
        base = self.states.select("id", "_depth", "_ord", (F.col("_depth") == 1).alias("init"), *preds)
        aggs = [F.lit(True).alias("moves")] + [
            F.max(F.col("_action") == F.lit(a)).alias(f"en_{self.actions.index(a)}") for a in fair_actions]
        out = self.edges.groupBy(F.col("src").alias("id")).agg(*aggs)
        cols = [F.coalesce(F.col(c), F.lit(False)).alias(c) for c in out.columns if c != "id"]
        nodes = base.join(out, "id", "left").select(*base.columns, *cols).withColumn("stuck", ~F.col("moves"))
        self._nodes_by[key] = nodes = self._keep(nodes)
        return nodes

    def edges_within(self, region: DataFrame) -> DataFrame:
        """The edges with both ends in ``region`` (a DataFrame with ``id``)."""
        r = region.select("id")
        return self._keep(self.edges.join(r.withColumnRenamed("id", "src"), "src", "left_semi")
                          .join(r.withColumnRenamed("id", "dst"), "dst", "left_semi"))

    # ---- one property ----------------------------------------------------------------------------
    def check(self, prop: Property, exprs: tuple[str, ...], fairness: list[str]) -> PropertyResult:
        fair = Fairness.parse(fairness, self.actions)
        nodes = self.nodes(exprs, tuple(fair.actions))
        if prop.form == "AG EF":
            return self._ag_ef(prop, nodes)
        buchi = "NOT p0" if prop.form == "<>[]" else None
        if prop.form in ("<>", "[]<>"):
            region = nodes.where("NOT p0")
        elif prop.form == "~>":
            region = nodes.where("NOT p1")
        else:  # <>[]: the behavior may go anywhere; it must meet not P infinitely often
            region = nodes
        sub = self.edges if prop.form == "<>[]" else self.edges_within(region)
        acc = self._accepting(region, sub, fair, buchi)
        res = PropertyResult(prop.name, prop.form, fairness, holds=True)
        if prop.form == "<>":
            # Through states of not P only, from an initial state.
            reach = self._bfs(region.where("init").select("id"), sub, backward=False)
            res.bad_states = reach.join(acc.fair_u, "id", "left_semi").count()
            if res.bad_states == 0:
                return res
            ends = reach.join(acc.stutter, "id", "left_semi")
            if ends.isEmpty():
                ends = reach.join(acc.cycles_df(), "id", "left_semi")
            path = self._walk(reach, ends.orderBy("dist", "id").first()["id"], backward=False)
        elif prop.form == "~>":
            res.bad_states = acc.fair_u.join(nodes.where("p0"), "id", "left_semi").count()
            if res.bad_states == 0:
                return res
            for ends in (acc.stutter, None):
                near = self._bfs(ends if ends is not None else acc.cycles_df(), sub, backward=True)
                entry = near.join(nodes.where("p0").select("id", "_depth"), "id")
                if not entry.isEmpty():
                    break
            first = entry.orderBy(F.col("_depth") + F.col("dist"), "id").first()["id"]
            path = self._tree_path(first) + self._walk(near, first, backward=True)[1:]
        else:  # []<> and <>[]: a shortest path to the nearest state where the behavior can end
            res.bad_states = acc.fair_u.count()
            if res.bad_states == 0:
                return res
            ends = acc.stutter if acc.cycles is None else acc.stutter.unionByName(acc.cycles.select("id"))
            if ends.isEmpty():
                ends = acc.cycles_df().select("id")
            path = self._tree_path(ends.agg(F.min("id")).first()[0])
        res.holds = False
        last = path[-1][0]
        if not acc.stutter.where(F.col("id") == F.lit(last)).isEmpty():
            loop_ids, closing = [], None
        else:
            loop_ids, closing = self._cycle(last, acc)
        res.trace = self._states_of(path + loop_ids)
        res.loop = len(path) - 1
        res.loop_action = closing
        return res

    def _ag_ef(self, prop: Property, nodes: DataFrame) -> PropertyResult:
        good = self._bfs(nodes.where("p0").select("id"), self.edges, backward=True)
        doomed = nodes.select("id").join(good, "id", "left_anti")
        res = PropertyResult(prop.name, prop.form, [], holds=True)
        res.bad_states = doomed.count()
        if res.bad_states:
            res.holds = False
            res.trace = self._states_of(self._tree_path(doomed.orderBy("id").first()["id"]))
        return res

    # ---- fair states ----------------------------------------------------------------------------
    def _accepting(self, region: DataFrame, sub: DataFrame, fair: "Fairness", buchi: str | None) -> "Accepting":
        """Where a fair behavior can end within ``region`` (over ``sub``, the edges it may take): the
        states where stuttering for ever is fair, the fair components (computed when needed), and
        ``fair_u``, the states from which a fair behavior stays in the region for ever."""
        stutter_ok = F.lit(True)
        if fair.next_:
            stutter_ok = stutter_ok & F.col("stuck")
        for i in fair.actions_idx:
            stutter_ok = stutter_ok & ~F.col(f"en_{i}")
        stutter = region.where(stutter_ok)
        if buchi:
            stutter = stutter.where(buchi)
        stutter = self._keep(stutter.select("id"))

        def components(where: DataFrame) -> tuple[DataFrame, dict]:
            return self._fair_components(where, fair, buchi)

        if not fair.any:
            # Without fairness a behavior may stutter anywhere: it ends in any state of the region (of
            # not P, for <>[]P).
            fair_u = region.select("id") if buchi is None else self._bfs(stutter, sub, backward=True).select("id")
            return Accepting(stutter, None, {}, self._keep(fair_u), lambda: components(region))
        if not fair.actions and buchi is None:
            # WF_vars(Next) alone: X = region ∩ (Stuck ∪ pre(X)), by trimming; its components are
            # computed only when a counterexample needs a cycle.
            x = self._trim(region.select("id", F.col("stuck").alias("ok")), sub)
            return Accepting(stutter, None, {}, x.select("id"),
                             lambda: components(region.join(x, "id", "left_semi")))
        comps, waypoints = components(region)
        ends = stutter.unionByName(comps.select("id"))
        fair_u = self._keep(self._bfs(ends, sub, backward=True).select("id"))
        return Accepting(stutter, comps, waypoints, fair_u, None)

    def _empty_comp(self) -> DataFrame:
        return self.spark.createDataFrame([], "id long, comp long")

    def _trim(self, x: DataFrame, sub: DataFrame) -> DataFrame:
        """The greatest X within ``x`` (id, ok) where every state is ok or has a step into X."""
        x, n, _ = self._kept_count(x)
        while True:
            has = sub.join(x.select(F.col("id").alias("dst")), "dst", "left_semi").select(F.col("src").alias("id"))
            nxt, m, _ = self._kept_count(x.where("ok").unionByName(x.where("NOT ok").join(has, "id", "left_semi")))
            if m == n:
                return nxt
            x, n = nxt, m

    def _fair_components(self, region: DataFrame, fair: "Fairness", buchi: str | None
                         ) -> tuple[DataFrame, dict[int, dict[str, Any]]]:
        """The fair strongly connected components within ``region``: (id, comp) and, per component, how
        its cycle meets each fairness condition."""
        # States with a step into the region and a step from within it: the rest lie on no cycle.
        sub = self.edges_within(region)
        both = self._two_sided(region.select("id"), sub)
        cols = [c for c in region.columns if c.startswith("en_")] + ["p0"]
        work = region.join(both, "id", "left_semi").select("id", *cols)
        accepted: list[DataFrame] = []
        waypoints: dict[int, dict[str, Any]] = {}
        for _ in range(len(fair.strong) + 2):
            if work.isEmpty():
                break
            wsub = self.edges_within(work)
            comp = self._scc(work.select("id"), wsub)
            members = self._keep(comp.join(work, "id"))
            inner = self._keep(wsub.join(comp.withColumnRenamed("id", "src"), "src")
                               .join(comp.select(F.col("id").alias("dst"), F.col("comp").alias("c2")), "dst")
                               .where("comp = c2").drop("c2"))
            per = inner.groupBy("comp").agg(
                F.min(F.struct("src", "dst")).alias("any_step"),
                *[F.min(F.when(F.col("_action") == F.lit(self.actions[i]), F.struct("src", "dst"))).alias(f"step_{i}")
                  for i in fair.actions_idx])
            st = members.groupBy("comp").agg(
                *[F.min(F.when(~F.col(f"en_{i}"), F.col("id"))).alias(f"dis_{i}") for i in fair.actions_idx],
                *[F.max(F.col(f"en_{i}")).alias(f"en_{i}") for i in fair.actions_idx],
                F.min(F.when(F.expr(buchi), F.col("id"))).alias("bad") if buchi else F.lit(None).alias("bad"))
            rows = per.join(st, "comp").collect()  # one row per nontrivial component: a few figures each
            keep, refine = [], {}
            for r in rows:
                ok = buchi is None or r["bad"] is not None
                for i in fair.weak_idx:
                    ok = ok and (r[f"step_{i}"] is not None or r[f"dis_{i}"] is not None)
                if not ok:
                    continue
                blocked = [i for i in fair.strong_idx if r[f"step_{i}"] is None and r[f"en_{i}"]]
                if blocked:
                    refine[r["comp"]] = blocked
                    continue
                keep.append(r["comp"])
                waypoints[r["comp"]] = _waypoints(r, fair, buchi is not None)
            if keep:
                accepted.append(self._keep(members.where(F.col("comp").isin(keep)).select("id", "comp")))
            if not refine:
                break
            # Strong fairness of A, never taken in the component: a fair cycle avoids A's enabled states.
            drop = F.lit(False)
            for c, blocked in refine.items():
                cond = F.lit(False)
                for i in blocked:
                    cond = cond | F.col(f"en_{i}")
                drop = drop | ((F.col("comp") == F.lit(c)) & cond)
            work = self._keep(members.where(F.col("comp").isin(list(refine))).where(~drop).select("id", *cols))
        comps = accepted[0] if len(accepted) == 1 else (
            self._keep(_union(accepted)) if accepted else self._empty_comp())
        return comps, waypoints

    def _two_sided(self, region: DataFrame, sub: DataFrame) -> DataFrame:
        """The greatest set within ``region`` whose every state has a step from and a step into it."""
        x, n, _ = self._kept_count(region)
        while True:
            e = sub.join(x.withColumnRenamed("id", "src"), "src", "left_semi") \
                   .join(x.withColumnRenamed("id", "dst"), "dst", "left_semi")
            nxt, m, _ = self._kept_count(x.join(e.select(F.col("src").alias("id")), "id", "left_semi")
                                         .join(e.select(F.col("dst").alias("id")), "id", "left_semi"))
            if m == n:
                return nxt
            x, n = nxt, m

    def _scc(self, region: DataFrame, sub: DataFrame) -> DataFrame:
        """Strongly connected components of ``region`` over ``sub`` (edges within it), by coloring: each
        state takes the smallest key among the states that reach it; a state whose key is its color is
        a root, and its component is the states of its color that reach it. Repeated on what is left.
        Components with one state and no step are left out (they lie on no cycle). (id, comp)."""
        remaining, left, _ = self._kept_count(region.select("id", _mix(F.col("id")).alias("key")))
        found: list[DataFrame] = []
        while left:
            e = self.edges_within(remaining)
            color = remaining.select("id", F.col("key").alias("c"))
            while True:
                cand = e.join(color.select(F.col("id").alias("src"), "c"), "src") \
                        .groupBy(F.col("dst").alias("id")).agg(F.min("c").alias("c2"))
                nxt, _, changed = self._kept_count(
                    color.join(cand, "id", "left").select("id", F.least("c", F.coalesce("c2", "c")).alias("c"),
                                                          F.coalesce(F.col("c2") < F.col("c"), F.lit(False))
                                                          .alias("changed")), hit=F.col("changed"))
                color = nxt.drop("changed")
                if not changed:
                    break
            same = self._keep(e.join(color.select(F.col("id").alias("src"), F.col("c").alias("cs")), "src")
                              .join(color.select(F.col("id").alias("dst"), F.col("c").alias("cd")), "dst")
                              .where("cs = cd").select("src", "dst", F.col("cs").alias("c")))
            parts = [self._keep(color.join(remaining, "id").where("c = key").select("id", "c"))]
            frontier = parts[0]
            while True:
                step, n, _ = self._kept_count(
                    same.join(frontier.select(F.col("id").alias("dst"), "c"), ["dst", "c"])
                        .select(F.col("src").alias("id"), "c").distinct().join(_union(parts), "id", "left_anti"))
                if not n:
                    break
                parts.append(step)
                frontier = step
            member = self._keep(_union(parts))
            found.append(member)
            remaining, left, _ = self._kept_count(remaining.join(member, "id", "left_anti"))
        # A component is named by its root's id (the id in its color's key).
        comp = (self._keep(_union(found).select("id", F.col("c")["i"].alias("comp"))) if found
                else self._empty_comp())
        # Keep the components with a step inside (a lone state without a step lies on no cycle).
        inner = sub.join(comp.withColumnRenamed("id", "src"), "src") \
                   .join(comp.select(F.col("id").alias("dst"), F.col("comp").alias("c2")), "dst") \
                   .where("comp = c2").select("comp").distinct()
        return self._keep(comp.join(inner, "comp", "left_semi"))

    # ---- paths ----------------------------------------------------------------------------------
    def _bfs(self, sources: DataFrame, sub: DataFrame, backward: bool, stop: int | None = None) -> DataFrame:
        """Breadth-first search over ``sub`` from ``sources`` (forward, or backward along the edges):
        (id, dist, via), ``via`` the state one step nearer the sources (the smallest id among them).
        With ``stop`` (an id), it ends at the level that meets it. One job a level, and one at the end."""
        near, far = ("dst", "src") if backward else ("src", "dst")
        first = self._keep(sources.select("id").distinct().select(
            "id", F.lit(0).alias("dist"), F.lit(None).cast("long").alias("via")))
        parts, frontier, d = [first], first, 0
        while True:
            d += 1
            step = (sub.join(frontier.select(F.col("id").alias(near)), near)
                    .select(F.col(far).alias("id"), F.col(near).alias("via"))
                    .join(_union(parts).select("id"), "id", "left_anti")
                    .groupBy("id").agg(F.min("via").alias("via"))
                    .select("id", F.lit(d).alias("dist"), "via"))
            step, n, hit = self._kept_count(step, hit=None if stop is None else F.col("id") == F.lit(stop))
            if not n:
                break
            parts.append(step)
            frontier = step
            if hit:
                break
        return parts[0] if len(parts) == 1 else self._keep(_union(parts))

    def _walk(self, reached: DataFrame, start: int, backward: bool) -> list[tuple[int, str | None]]:
        """The path a ``_bfs`` result gives: forward, from a source to ``start`` (its ``via`` chain
        reversed); backward, from ``start`` along ``via`` to a source. [(id, action into it)]."""
        chain = [start]
        while True:
            row = reached.where(F.col("id") == F.lit(chain[-1])).select("via").first()
            if row is None or row["via"] is None:
                break
            chain.append(int(row["via"]))
        if not backward:
            chain.reverse()
        return [(chain[0], None)] + [(b, self._action(a, b)) for a, b in zip(chain, chain[1:])]

    def _action(self, src: int, dst: int) -> str:
        """The first action of Next (in its order) with a step from ``src`` to ``dst``."""
        names = [r["_action"] for r in self.edges.where((F.col("src") == F.lit(src)) & (F.col("dst") == F.lit(dst)))
                 .select("_action").distinct().collect()]
        return min(names, key=self.actions.index)

    def _tree_path(self, target: int) -> list[tuple[int, str | None]]:
        """The search's shortest path to ``target`` (its breadth-first tree, the parents the states
        table records), as [(id, action into it)]."""
        depth, ord_ = divmod(int(target), 1 << ORD_BITS)
        row = self.store.find_by_ord(depth, ord_)
        chain = [(_id_of(depth, ord_), row["_action"])]
        while row.get("_parent_fp") is not None:
            row = self.store.find_state(int(row["_depth"]) - 1, row["_parent_fp"], row["_parent_fp2"])
            chain.append((_id_of(row["_depth"], row["_ord"]), row["_action"]))
        chain.reverse()
        return [(sid, action if i else None) for i, (sid, action) in enumerate(chain)]

    def _cycle(self, start: int, acc: "Accepting") -> tuple[list[tuple[int, str]], str]:
        """A cycle from ``start`` (a state of a fair component) back to it within the component, through
        its waypoints: a step of each fair action it has, else a state where the action is disabled,
        and for <>[]P a state of not P. The states after ``start`` and the action closing the cycle."""
        cycles = acc.cycles_df()
        comp = cycles.where(F.col("id") == F.lit(start)).select("comp").first()["comp"]
        members = cycles.where(F.col("comp") == F.lit(comp)).select("id")
        sub = self.edges_within(members)
        legs: list[tuple[str, Any]] = list(acc.waypoints.get(comp, {}).get("legs", []))
        path: list[tuple[int, str | None]] = [(start, None)]
        for kind, what in legs:
            here = path[-1][0]
            if kind == "state":
                path += self._leg(sub, here, int(what))[1:]
            else:  # a step (src, dst) of a fair action (its index in Next), or of any
                src, dst, i = int(what[0]), int(what[1]), what[2]
                path += self._leg(sub, here, src)[1:]
                path.append((dst, self.actions[i] if i is not None else self._action(src, dst)))
        here = path[-1][0]
        if here == start and len(path) == 1:
            # No waypoint moved: any step within the component, then back.
            nxt = sub.where(F.col("src") == F.lit(start)).orderBy("dst").first()["dst"]
            path.append((int(nxt), self._action(start, int(nxt))))
            here = int(nxt)
        back = self._leg(sub, here, start) if here != start else [(start, None)]
        path += back[1:]
        # path = start ... start: the states after the first, the last one (start) being "back to".
        *states, (_, closing) = path[1:]
        return states, closing

    def _leg(self, sub: DataFrame, src: int, dst: int) -> list[tuple[int, str | None]]:
        if src == dst:
            return [(src, None)]
        reached = self._bfs(self.spark.createDataFrame([(src,)], "id long"), sub, backward=False, stop=dst)
        return self._walk(reached, dst, backward=False)

    def _states_of(self, path: list[tuple[int, str | None]]) -> list[dict[str, Any]]:
        """The trace of a path of ids: each state's variables, fingerprint and the action into it."""
        out = []
        for i, (sid, action) in enumerate(path):
            depth, ord_ = divmod(sid, 1 << ORD_BITS)
            row = self.store.find_by_ord(depth, ord_)
            out.append({"action": "Init" if i == 0 else action, "fingerprint": [row["_fp"], row["_fp2"]],
                        "state": {v: row[v] for v in self.variables}})
        return out


@dataclass
class Accepting:
    stutter: DataFrame                  # id: states where stuttering for ever is fair
    cycles: DataFrame | None            # id, comp: states of fair components (None: not computed yet)
    waypoints: dict[Any, Any]           # per component, the legs of its cycle
    fair_u: DataFrame                   # id: states from which a fair behavior stays in the region
    compute: Any = None                 # () -> (cycles, waypoints), when not computed yet

    def cycles_df(self) -> DataFrame:
        if self.cycles is None:
            self.cycles, self.waypoints = self.compute()
        return self.cycles


@dataclass
class Fairness:
    next_: bool
    weak: list[str]
    strong: list[str]
    actions: list[str]
    weak_idx: list[int]
    strong_idx: list[int]
    actions_idx: list[int]

    @property
    def any(self) -> bool:
        return self.next_ or bool(self.actions)

    @staticmethod
    def parse(items: list[str], actions: list[str]) -> "Fairness":
        next_, weak, strong = False, [], []
        for it in items:
            kind, _, a = it.partition(":")
            if not a:
                next_ = True
            elif kind == "weak":
                weak.append(a)
            else:
                strong.append(a)
        weak = [a for a in dict.fromkeys(weak) if a not in strong]  # SF implies WF
        acts = list(dict.fromkeys([*weak, *strong]))
        return Fairness(next_, weak, list(dict.fromkeys(strong)), acts, [actions.index(a) for a in weak],
                        [actions.index(a) for a in dict.fromkeys(strong)], [actions.index(a) for a in acts])


def _waypoints(r, fair: Fairness, buchi: bool) -> dict[str, Any]:
    legs: list[tuple[str, Any]] = []
    for i in fair.actions_idx:
        step = r[f"step_{i}"]
        if step is not None:
            legs.append(("step", (step["src"], step["dst"], i)))
        elif i in fair.weak_idx:
            legs.append(("state", r[f"dis_{i}"]))
    if buchi:
        legs.append(("state", r["bad"]))
    if not legs:
        step = r["any_step"]
        legs.append(("step", (step["src"], step["dst"], None)))
    return {"legs": legs}


def _id(depth: Column, ord_: Column) -> Column:
    return depth.cast("long") * F.lit(1 << ORD_BITS) + ord_


def _id_of(depth: int, ord_: int) -> int:
    return (int(depth) << ORD_BITS) + int(ord_)


def _mix(x: Column) -> Column:
    """A key for the coloring that orders states at random, and exactly (ties broken by the id)."""
    return F.struct(F.xxhash64(x).alias("h"), x.alias("i"))


def _union(frames: list[DataFrame]) -> DataFrame:
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    return out
