"""Symmetry reduction on the toy model ``tokens``, against an independent Python search that
counts the reachable orbits under every permutation of Procs (TLC's SYMMETRY)."""
import itertools
import json

import pytest

from conftest import setting_args, TEST_MODELS, run_cli


def successors(s, procs, max_, log_len):
    cnt, owner, log, done, last = s
    out = []
    for i, p in enumerate(procs):                                   # Next == \E p : Inc \/ Take \/ Release
        if cnt[i] < max_:
            c = list(cnt)
            c[i] += 1
            out.append(("Inc", (tuple(c), owner, log, done, (p, c[i]))))
        if owner is None and len(log) < log_len:
            out.append(("Take", (cnt, p, log + (p,), tuple(sorted(set(done) | {p})), last)))
        if owner == p:
            out.append(("Release", (cnt, None, log, done, last)))
    return out


def permute(s, procs, pi):
    cnt, owner, log, done, last = s
    ren = dict(zip(procs, pi))
    new_cnt = [0] * len(procs)
    for k, p in enumerate(procs):
        new_cnt[procs.index(ren[p])] = cnt[k]
    return (tuple(new_cnt), ren.get(owner), tuple(ren[x] for x in log),
            tuple(sorted(ren[x] for x in done)), None if last is None else (ren[last[0]], last[1]))


def reference(procs, max_, log_len, symmetry):
    """Breadth-first over states; with symmetry a state is known by the smallest of its orbit.
    Returns distinct, generated, depth and the successors each action generated (TLC's coverage)."""
    perms = list(itertools.permutations(procs)) if symmetry else [tuple(procs)]

    def key(s):
        return min(repr(permute(s, procs, pi)) for pi in perms)

    init = (tuple([0] * len(procs)), None, (), (), None)
    seen, frontier, depth, generated = {key(init)}, [init], 1, 1
    per_action = {"Init": 1, "Inc": 0, "Take": 0, "Release": 0}
    while frontier:
        nxt = []
        for s in frontier:
            for action, t in successors(s, procs, max_, log_len):
                generated += 1
                per_action[action] += 1
                k = key(t)
                if k not in seen:
                    seen.add(k)
                    nxt.append(t)
        if nxt:
            depth += 1
        frontier = nxt
    return len(seen), generated, depth, per_action


def check(capsys, tmp_path, *args, settings=None):
    code, out, err = run_cli(capsys, "--models", str(TEST_MODELS), *setting_args(**(settings or {})), "check", "tokens",
                             "--warehouse", str(tmp_path / "wh"), "--json", "--quiet", *args)
    assert out.strip(), err
    return code, json.loads(out)


CASES = [(["p1", "p2", "p3"], 1, 2), (["p1", "p2"], 2, 2)]


@pytest.mark.parametrize("procs,max_,log_len", CASES)
@pytest.mark.parametrize("level_path", ["driver", pytest.param("spark", marks=pytest.mark.long)])
def test_orbit_counts_match_reference(capsys, tmp_path, monkeypatch, level_path, procs, max_, log_len):
    """Orbits counted as the reference counts them, whether the levels are finished on the driver
    (engine.search.arrow_level: canonical fingerprints of every successor) or by Spark's stages (states
    de-duplicated as generated first, then canonicalized)."""
    settings = {"level_path": level_path}
    sets = ["--set", f"Procs={','.join(procs)}", "--set", f"Max={max_}", "--set", f"LogLen={log_len}"]
    code, sym = check(capsys, tmp_path, *sets, settings=settings)
    assert code == 0
    assert sym["symmetry"] is True
    assert (sym["distinct_states"], sym["states_generated"], sym["depth"], sym["actions_generated"]) == \
        reference(procs, max_, log_len, symmetry=True)
    code, full = check(capsys, tmp_path, *sets, "--no-symmetry", settings=settings)
    assert code == 0
    assert full["symmetry"] is False and full["run_id"] != sym["run_id"]
    assert (full["distinct_states"], full["states_generated"], full["depth"], full["actions_generated"]) == \
        reference(procs, max_, log_len, symmetry=False)
    assert sym["distinct_states"] < full["distinct_states"]


def _tokens_copy(tmp_path, old, new):
    import shutil
    root = tmp_path / "models"
    shutil.copytree(TEST_MODELS, root)
    schema = root / "schemas" / "tokens.yml"
    text = schema.read_text()
    assert old in text
    schema.write_text(text.replace(old, new))
    return root, schema


@pytest.mark.parametrize("old,new,message", [
    ('symmetry: {index: {"": Procs}}', 'symmetry: {index: {"": Max}}',
     "variable cnt: symmetry index '' names 'Max', which is not a symmetry set"),
    ('symmetry: {index: {"": Procs}}', 'symmetry: {index: {"": Procs}, sets: [""]}',
     "variable cnt: symmetry path '' is both 'index' and 'sets'"),
    ('symmetry: {sets: [""]}', 'symmetry: {sets: ["x["]}',
     "variable done: symmetry path 'x[' is not a path"),
    ('symmetry: {sets: [""]}', 'symmetry: {order: [""]}',
     "variable done: 'symmetry:' takes 'index: {PATH: Set}' and 'sets: [PATH, ...]'"),
    ("symmetry: [Procs]\n", "",
     "variables ['cnt', 'done'] declare 'symmetry:' but the model declares no 'symmetry:' sets"),
])
def test_bad_symmetry_declarations_name_the_schema(tmp_path, old, new, message):
    from engine.errors import ModelError
    from engine.model.loader import load_model
    root, schema = _tokens_copy(tmp_path, old, new)
    with pytest.raises(ModelError) as exc:
        load_model("tokens", root)
    assert str(exc.value).startswith(f"{schema}: {message}")


def test_symmetry_path_must_name_an_array(capsys, tmp_path):
    root, schema = _tokens_copy(tmp_path, 'symmetry: {sets: [""]}', 'symmetry: {sets: [".who"]}')
    code, out, err = run_cli(capsys, "--models", str(root), "check", "tokens",
                             "--warehouse", str(tmp_path / "wh"), "--json", "--quiet")
    assert code == 2
    assert f"{schema}: variable done: symmetry path '.who' is not an array in its type array<string>" in err


def test_configuration_and_flag_turn_symmetry_off():
    from engine.model.loader import load_model, resolve_run
    model = load_model("tokens", TEST_MODELS)
    on = resolve_run(model, "default")
    assert on.symmetry is True
    assert resolve_run(model, "nosym").symmetry is False
    off = resolve_run(model, "default", symmetry=False)
    assert off.symmetry is False and off.run_id != on.run_id


def _perm_state(state, names, pi):
    """Apply the renaming names[k] -> pi[k] to a state of the schema below, by hand."""
    ren = dict(zip(names, pi))
    nodes, owner, held = state
    new_nodes = [None] * len(names)
    for k, node in enumerate(nodes):                  # nodes is a function over Names
        peer = None if node["peer"] is None else ren[node["peer"]]
        new_nodes[names.index(ren[names[k]])] = {"n": node["n"], "peer": peer,
                                                 "seen": sorted(ren[x] for x in node["seen"])}
    return new_nodes, ren.get(owner, owner), sorted(ren[x] for x in held)


def test_canonical_fingerprint_is_one_per_orbit(spark, monkeypatch):
    """Every permutation of a state gets the state's canonical fingerprint, and states of different
    orbits get different ones, for a function over the set whose entries mix model values (a peer,
    a sorted set) with plain counters (the cheap key), a plain string and a sorted set. The
    permutations written out as literals, the lambda over them and the JVM helper sse_canonical give
    the same fingerprints."""
    import engine.search.symmetry as symmetry
    from engine.search.symmetry import SymmetryShape, canonical_fingerprint_stages
    ddl = ("nodes array<struct<n:int, peer:string, seen:array<string>>>, owner string, "
           "held array<string>")
    schema = spark.createDataFrame([], ddl).schema
    shapes = {"nodes": SymmetryShape({"": "Names"}, ("[].seen",)), "held": SymmetryShape({}, ("",))}
    names = ["a", "b", "c"]

    def fingerprints(df, literal_permutations=24, helper=False):
        for stage in canonical_fingerprint_stages(schema, shapes, {"Names": names}, using="row-bytes",
                                                  literal_permutations=literal_permutations, helper=helper):
            df = df.selectExpr("*", *stage)
        return [(r["_fp"], r["_fp2"]) for r in df.collect()]

    def node(n, peer, seen):
        return {"n": n, "peer": peer, "seen": seen}

    states = [
        ([node(0, "b", ["c"]), node(0, None, []), node(1, "a", ["a", "b"])], "a", ["b"]),
        ([node(0, "b", ["c"]), node(0, None, []), node(1, "a", ["a", "b"])], "a", ["c"]),  # other orbit
        ([node(0, None, []), node(0, None, []), node(0, None, [])], "x", []),  # every key ties
        ([node(0, None, []), node(0, None, []), node(0, "a", [])], "x", []),
    ]
    rows, orbit_of = [], []
    for i, s in enumerate(states):
        for pi in itertools.permutations(names):
            p = _perm_state(s, names, pi)
            rows.append((p[0], p[1], p[2]))
            orbit_of.append(i)
    df = spark.createDataFrame(rows, ddl)
    fps = fingerprints(df)
    assert fingerprints(df, literal_permutations=0) == fps
    assert fingerprints(df, helper=True) == fps  # the JVM helper picks the SQL's image
    by_orbit = {}
    for i, fp in zip(orbit_of, fps):
        by_orbit.setdefault(i, set()).add(fp)
    assert all(len(v) == 1 for v in by_orbit.values()), by_orbit
    assert len({next(iter(v)) for v in by_orbit.values()}) == len(states)


@pytest.mark.parametrize("level_path", ["driver", "spark"])
def test_jvm_helper_and_sql_store_the_same_fingerprints(spark, tmp_path, capsys, level_path):
    """The accelerator canonicalizes with the JVM helper sse_canonical; without it (disabled, or on
    the portable path) the SQL does. Both runs store the same states under the same fingerprints,
    so a run resumed on the other path finds what it had seen."""
    from deltalake import DeltaTable
    from engine.model.loader import load_model, resolve_run
    from engine.search.loop import check as run
    from engine.settings import Settings
    spec = resolve_run(load_model("tokens", TEST_MODELS), None, ["Procs=p1,p2,p3", "Max=1", "LogLen=2"], None, None)
    stored = {}
    for name, disabled in (("jvm", ""), ("sql", "Canonical")):
        settings = Settings(level_path=level_path, disabled_helpers=disabled)
        out = run(spec, tmp_path / name, settings=settings, spark=spark)
        fallback = "engine: symmetry: the orbit's smallest member in SQL, as on the portable path (Canonical " \
                   "disabled by the settings)"
        assert (fallback in capsys.readouterr().err) == bool(disabled)
        table = DeltaTable(out.tables["states"]).to_pyarrow_table(columns=["_fp", "_fp2"])
        stored[name] = sorted(zip(table["_fp"].to_pylist(), table["_fp2"].to_pylist()))
    assert len(stored["jvm"]) == reference(["p1", "p2", "p3"], 1, 2, symmetry=True)[0]
    assert stored["jvm"] == stored["sql"]


def test_jvm_helper_declines_types_it_does_not_order(spark):
    """sse_canonical orders booleans, integers, strings, arrays and structs as Spark does; a state
    with a double (Spark orders NaN and -0.0 its own way) is canonicalized in SQL."""
    from engine.search.symmetry import helper_supports
    ok = spark.createDataFrame([], "a array<struct<x:int, y:string, z:boolean, w:bigint>>, b string").schema
    assert helper_supports(ok)
    assert not helper_supports(spark.createDataFrame([], "a array<struct<x:double>>, b string").schema)


def test_a_later_run_in_the_process_takes_over_the_planned_union_and_finds_the_same_orbits(spark, tmp_path,
                                                                                           monkeypatch):
    """An engine server's commands, each in a session of its own: a run of a configuration run before
    takes over that run's planned union (parked when it ended) instead of planning it again, with the
    reference's figures; its seen filter blanks repeats under the plan's set name; another
    configuration plans and parks its own."""
    import engine.accel.held as held
    from engine.model.loader import load_model, resolve_run
    from engine.search.loop import check as run
    from engine.settings import Settings

    procs, max_, log_len = CASES[0]
    sets = [f"Procs={','.join(procs)}", f"Max={max_}", f"LogLen={log_len}"]
    model = load_model("tokens", TEST_MODELS)
    specs = {sym: resolve_run(model, None, sets, symmetry=sym) for sym in (True, False)}
    blanked = []
    real = held.HeldExpansion.successors
    monkeypatch.setattr(held.HeldExpansion, "successors",
                        lambda self, *a, **k: blanked.append((self.adopted, real(self, *a, **k))) or blanked[-1][1])
    settings = Settings(level_path="driver")
    held.drop_parked()  # (the suite's earlier runs of this configuration parked theirs)
    uses = []
    for i, sym in enumerate([True, False, True, False, True]):
        blanked.clear()
        out = run(specs[sym], tmp_path / f"wh{i}", settings=settings, spark=spark.newSession(), fresh=True)
        assert (out.distinct_states, out.states_generated, out.depth, out.actions_generated) == \
            reference(procs, max_, log_len, symmetry=sym)
        assert out.path == "accelerated" and out.symmetry is sym
        assert {adopted for adopted, _ in blanked} == {i >= 2}
        assert sum(t.filter(t["_seen"]).num_rows for _, t in blanked) > 0  # (the plan tests this run's set)
        uses.append(sorted(held.parked().values()))
    assert uses == [[0], [0, 0], [0, 1], [1, 1], [1, 2]]
