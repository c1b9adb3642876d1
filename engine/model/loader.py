"""Loading a model: its schema (YAML), its SQL files, its constants and named configurations.

A model is data: ``schemas/<name>.yml`` plus ``actions_sql/<name>/``, one SQL file per spec
operator named after it. The init file and the actions sit at the top of that folder; each other kind
has a subfolder of its own (``KIND_FOLDERS``): ``invariants/``, ``constraints/``, ``assumptions/``
(``assumes:``), ``functions/`` and ``findings/`` (``terminal_findings:``). Everything is checked here,
before Spark starts, so that a malformed model is rejected with a message naming the file and saying
how to fix it.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from engine.errors import ModelError, UsageError
from engine.settings import Settings

__all__ = [
    "Constant", "Variable", "SqlFile", "Model", "Property", "RunSpec", "FORMS",
    "default_models_root", "list_models", "load_model", "resolve_run", "parse_case", "parse_fairness",
    "variable_shapes",
]

IDENT = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
MODEL_VALUE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
INT = re.compile(r"^-?[0-9]+$")

CONSTANT_TYPES = {
    "int": "INT",
    "bool": "BOOLEAN",
    "model_value": "STRING",
    "set<int>": "ARRAY<INT>",
    "set<model_value>": "ARRAY<STRING>",
}
SUCCESSOR_ORDERS = ("action_first", "choice_first")
MAX_ACTIONS = 64  # the successor-order key packs the action index into 6 bits

_MODEL_KEYS = {
    "name", "title", "source", "constants", "variables", "init", "actions", "invariants",
    "constraints", "configurations", "default_configuration", "successor_order", "symmetry", "doc",
    "assumes", "extends", "abstract", "functions", "terminal_findings", "properties",
}
# What a derived model (``extends: base``) may say about the base's actions, keeping Next's order.
_ACTION_EDITS = {"remove", "replace", "add", "add_before"}
_CONFIG_KEYS = {"doc", "constants", "invariants", "constraints", "deadlock", "symmetry", "properties", "fairness"}
# The temporal forms a property file may state (engine.search.liveness): TLA+'s <>P, []<>P, <>[]P and
# P ~> Q, and the CTL form AG EF P (every reachable state can still reach P).
FORMS = ("<>", "[]<>", "<>[]", "~>", "AG EF")
_DIRECTIVE = re.compile(r"^--\s*(form|fairness)\s*:\s*(.*?)\s*$", re.IGNORECASE)
_FAIRNESS_ITEM = re.compile(r"^(weak|strong)(?::([A-Za-z][A-Za-z0-9_]*))?$")

# Where each kind of SQL file lives in actions_sql/<model>/ ("" the folder itself), the schema key that
# declares it, and how a message names it. The loader looks a file up only in its kind's folder.
KIND_FOLDERS = {
    "init": "", "action": "", "invariant": "invariants", "constraint": "constraints",
    "assumption": "assumptions", "function": "functions", "terminal finding": "findings",
    "property": "properties",
}
_KIND_KEYS = {
    "init": "init", "action": "actions", "invariant": "invariants", "constraint": "constraints",
    "assumption": "assumes", "function": "functions", "terminal finding": "terminal_findings",
    "property": "properties",
}
_KIND_NAMED = {
    "init": "the init file", "action": "an action", "invariant": "an invariant", "constraint": "a constraint",
    "assumption": "an assumption", "function": "a function", "terminal finding": "a terminal finding",
    "property": "a property",
}


@dataclass(frozen=True)
class Constant:
    name: str
    type: str
    default: Any
    doc: str = ""

    @property
    def sql_type(self) -> str:
        return CONSTANT_TYPES[self.type]


@dataclass(frozen=True)
class Variable:
    name: str
    type: str
    doc: str = ""
    tla: str = ""
    itf: str = ""   # how the value is written in ITF traces (engine.traces.itf), when Spark's type does not say
    symmetry: Any = None  # how a permutation of the symmetry sets acts on it (engine/search/symmetry.py)


@dataclass(frozen=True)
class SqlFile:
    name: str
    kind: str  # init | action | invariant | constraint | assumption | function | terminal finding
    path: Path
    text: str


@dataclass(frozen=True)
class Property:
    """A temporal property (``properties:``, a file ``properties/<Name>.sql``): its form, its state
    predicates (two for ``~>``, one otherwise; each a boolean SQL expression over one state) and the
    fairness its formula carries itself (``-- fairness:``), added to the run's."""
    name: str
    form: str
    predicates: tuple[SqlFile, ...]
    fairness: tuple[str, ...]
    file: SqlFile


@dataclass(frozen=True)
class Model:
    name: str
    title: str
    schema_path: Path
    sql_dir: Path
    constants: dict[str, Constant]
    variables: list[Variable]
    init: SqlFile
    actions: list[SqlFile]
    invariants: dict[str, SqlFile]
    constraints: dict[str, SqlFile]
    configurations: dict[str, dict[str, Any]]
    default_configuration: str
    successor_order: str
    symmetry: list[str]
    source: dict[str, Any]
    digest: str
    assumptions: dict[str, SqlFile] = field(default_factory=dict)
    abstract: bool = False
    extends: tuple[str, ...] = ()       # the chain of bases, nearest first
    sql_dirs: tuple[Path, ...] = ()     # where SQL files are looked up, own folder first
    functions: list[SqlFile] = field(default_factory=list)
    terminal_findings: dict[str, SqlFile] = field(default_factory=dict)
    symmetry_shapes: dict[str, Any] = field(default_factory=dict)
    properties: dict[str, Property] = field(default_factory=dict)

    @property
    def variable_names(self) -> list[str]:
        return [v.name for v in self.variables]

    @property
    def action_names(self) -> list[str]:
        return [f.name for f in self.actions]

    def sql_files(self) -> list[SqlFile]:
        return [*self.functions, self.init, *self.actions, *self.invariants.values(), *self.constraints.values(),
                *self.assumptions.values(), *self.terminal_findings.values(),
                *(p.file for p in self.properties.values())]


@dataclass(frozen=True)
class RunSpec:
    """Everything that determines a run's outcome; its hash is the run id."""

    model: Model
    config: str
    constants: dict[str, Any]
    invariants: list[str]
    constraints: list[str]
    deadlock: bool
    extra: dict[str, Any] = field(default_factory=dict)
    symmetry: bool = False
    # The fingerprint scheme (engine.search.encoding: row-bytes or json): chosen when the run starts,
    # kept in the run's run.json, and the stored one when it resumes. Not part of the run id.
    fingerprint: str = ""
    # Temporal properties checked after the search (engine.search.liveness) and the run's fairness
    # (``weak``, ``weak:Action``, ``strong:Action``). Not part of the run id: they are checked over the
    # stored tables, and a finished run with edges is checked again for other properties.
    properties: list[str] = field(default_factory=list)
    fairness: list[str] = field(default_factory=list)
    # Whether the search stores the state graph's edges (a table ``edges``): part of the run id, so a
    # run without them is never taken for one with them.
    edges: bool = False

    def with_fingerprint(self, scheme: str) -> "RunSpec":
        return dataclasses.replace(self, fingerprint=scheme)

    @property
    def run_id(self) -> str:
        """The model, its configuration and constants and the engine's version, digested: a run is
        resumed, or its stored result returned, only by the same engine version (``engine.version``:
        bumped whenever what a search computes or stores changes)."""
        from engine.version import __version__
        payload = json.dumps(
            {
                "engine": __version__,
                "model": self.model.name,
                "model_digest": self.model.digest,
                "config": self.config,
                "constants": self.constants,
                "invariants": self.invariants,
                "constraints": self.constraints,
                "deadlock": self.deadlock,
                # canonical: which representative of an orbit is fingerprinted (a warehouse written
                # with another cannot be resumed: its fingerprints would not match)
                **({"symmetry": self.symmetry} if self.model.symmetry else {}),
                **({"canonical": "smallest-state"} if self.symmetry else {}),
                **({"edges": True} if self.edges else {}),
                **self.extra,
            },
            sort_keys=True,
        )
        return f"{self.config}-{hashlib.sha256(payload.encode()).hexdigest()[:16]}"


def default_models_root(settings: Settings | None = None) -> Path:
    """The folder holding ``schemas/`` and ``actions_sql/``: the setting ``models`` (SSE_MODELS), else
    this checkout, else the current folder."""
    if settings is not None and settings.models is not None:
        return Path(settings.models)
    here = Path(__file__).resolve().parents[2]
    if (here / "schemas").is_dir():
        return here
    return Path.cwd()


def list_models(root: Path | None = None) -> list[str]:
    root = Path(root) if root else default_models_root()
    schemas = root / "schemas"
    if not schemas.is_dir():
        raise ModelError(f"{schemas}: no schemas folder; pass --models DIR (a folder with schemas/ and actions_sql/)")
    return sorted(p.stem for p in schemas.glob("*.yml"))


def _fail(path: Path, msg: str) -> ModelError:
    return ModelError(f"{path}: {msg}")


def _str_list(path: Path, data: dict, key: str, required: bool = True) -> list[str]:
    value = data.get(key, [] if not required else None)
    if value is None:
        raise _fail(path, f"missing '{key}:' (a list of names)")
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _fail(path, f"'{key}:' must be a list of names, got {value!r}")
    for v in value:
        if not IDENT.match(v):
            raise _fail(path, f"'{key}:' entry {v!r} is not a valid name (letters, digits, _; starting with a letter)")
    if len(set(value)) != len(value):
        raise _fail(path, f"'{key}:' names something twice: {value}")
    return value


def _read_sql(path: Path, name: str, kind: str, schema_path: Path) -> SqlFile:
    if not path.is_file():
        raise ModelError(
            f"{schema_path}: {kind} '{name}' has no SQL file; create {path} "
            f"(or remove '{name}' from the schema)"
        )
    text = path.read_text()
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if not first.startswith("--"):
        raise _fail(path, "must open with a comment naming the TLA+ or P operator it translates, "
                          "e.g. '-- Spec.tla: Action(c)'")
    if not text.strip() or all(line.strip().startswith("--") or not line.strip() for line in text.splitlines()):
        raise _fail(path, "holds no SQL")
    return SqlFile(name=name, kind=kind, path=path, text=text)


def _read_schema(name: str, root: Path) -> tuple[Path, dict]:
    schema_path = root / "schemas" / f"{name}.yml"
    if not schema_path.is_file():
        known = ", ".join(list_models(root)) or "none"
        raise UsageError(f"unknown model '{name}': there is no {schema_path} (models: {known})")
    try:
        data = yaml.safe_load(schema_path.read_text())
    except yaml.YAMLError as exc:
        raise _fail(schema_path, f"is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise _fail(schema_path, "must be a YAML mapping")
    unknown = set(data) - _MODEL_KEYS
    if unknown:
        raise _fail(schema_path, f"unknown keys {sorted(unknown)}; allowed: {sorted(_MODEL_KEYS)}")
    if data.get("name") != name:
        raise _fail(schema_path, f"'name:' is {data.get('name')!r} but the file is named for '{name}'")
    if "abstract" in data and not isinstance(data["abstract"], bool):
        raise _fail(schema_path, "'abstract:' must be true or false")
    return schema_path, data


def _edit_actions(path: Path, base: list[str], edits: Any) -> list[str]:
    """A derived model's ``actions:``: a full list (its own Next), or edits of the base's list."""
    if isinstance(edits, list):
        return edits
    if not isinstance(edits, dict) or not edits or set(edits) - _ACTION_EDITS:
        raise _fail(path, f"'actions:' of a model that extends another is a list (its Next, in order) or a "
                          f"mapping of edits with keys {sorted(_ACTION_EDITS)}, got {edits!r}")
    out = list(base)

    def known(n: Any, what: str) -> str:
        if not isinstance(n, str) or n not in out:
            raise _fail(path, f"'actions: {what}:' names {n!r}, which the base model does not have "
                              f"(its actions: {', '.join(out)})")
        return n

    def names(value: Any, what: str) -> list[str]:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise _fail(path, f"'actions: {what}:' must be a list of names, got {value!r}")
        return value

    for n in names(edits.get("remove", []), "remove"):
        out.remove(known(n, "remove"))
    replace = edits.get("replace", {})
    if not isinstance(replace, dict):
        raise _fail(path, f"'actions: replace:' must map each base action to its replacement, got {replace!r}")
    for old, new in replace.items():
        if not isinstance(new, str):
            raise _fail(path, f"'actions: replace:' maps {old!r} to {new!r}, not a name")
        out[out.index(known(old, "replace"))] = new
    before = edits.get("add_before", {})
    if not isinstance(before, dict):
        raise _fail(path, f"'actions: add_before:' must map an action to the list of names to insert before it")
    for anchor, new in before.items():
        i = out.index(known(anchor, "add_before"))
        out[i:i] = names(new, "add_before")
    out.extend(names(edits.get("add", []), "add"))
    return out


def _resolve(name: str, root: Path, chain: tuple[str, ...] = ()) -> tuple[dict, list[Path], list[Path]]:
    """The schema with its bases folded in: (data, schema files, SQL folders), nearest first."""
    schema_path, data = _read_schema(name, root)
    own_dir = root / "actions_sql" / name
    base = data.get("extends")
    if base is None:
        return data, [schema_path], [own_dir]
    if not isinstance(base, str) or not IDENT.match(base):
        raise _fail(schema_path, f"'extends:' must name a base model, got {base!r}")
    if base == name or base in chain:
        cycle = " -> ".join([*chain, name, base])
        raise _fail(schema_path, f"'extends:' makes a cycle: {cycle}")
    if not (root / "schemas" / f"{base}.yml").is_file():
        raise _fail(schema_path, f"'extends:' names unknown model '{base}' (no {root / 'schemas' / f'{base}.yml'}; "
                                 f"models: {', '.join(list_models(root))})")
    bdata, bpaths, bdirs = _resolve(base, root, (*chain, name))
    if "variables" in data:
        raise _fail(schema_path, f"'variables:' are inherited from '{base}' (whose SQL files use them); "
                                 "a derived model cannot redeclare them")
    merged = {k: v for k, v in bdata.items() if k not in ("name", "title", "doc", "source", "abstract", "extends")}
    for key, value in data.items():
        if key in ("constants", "configurations"):
            if not isinstance(value, dict):
                raise _fail(schema_path, f"'{key}:' must be a mapping")
            merged[key] = {**(bdata.get(key) or {}), **value}
        elif key == "actions":
            merged[key] = _edit_actions(schema_path, _str_list(bpaths[0], bdata, "actions"), value)
        else:
            merged[key] = value
    merged.setdefault("source", bdata.get("source"))
    return merged, [schema_path, *bpaths], [own_dir, *bdirs]


def load_model(name: str, root: Path | None = None) -> Model:
    root = Path(root) if root else default_models_root()
    data, schema_paths, sql_dirs = _resolve(name, root)
    schema_path = schema_paths[0]

    constants: dict[str, Constant] = {}
    for cname, spec in (data.get("constants") or {}).items():
        if not IDENT.match(str(cname)):
            raise _fail(schema_path, f"constant {cname!r} is not a valid name")
        if not isinstance(spec, dict) or "type" not in spec or "default" not in spec:
            raise _fail(schema_path, f"constant {cname}: give 'type:' and 'default:'")
        ctype = spec["type"]
        if ctype not in CONSTANT_TYPES:
            raise _fail(schema_path, f"constant {cname}: type {ctype!r} is not one of {sorted(CONSTANT_TYPES)}")
        const = Constant(cname, ctype, None, spec.get("doc", ""))
        try:
            default = coerce_constant(const, spec["default"])
        except UsageError as exc:
            raise _fail(schema_path, f"default of {exc}") from None
        constants[cname] = Constant(cname, ctype, default, spec.get("doc", ""))

    raw_vars = data.get("variables")
    if not isinstance(raw_vars, dict) or not raw_vars:
        raise _fail(schema_path, "'variables:' must map each state variable to its type")
    variables = []
    for vname, spec in raw_vars.items():
        if not IDENT.match(str(vname)):
            raise _fail(schema_path, f"variable {vname!r}: names start with a letter (a leading _ is reserved for the engine)")
        if isinstance(spec, str):
            spec = {"type": spec}
        if not isinstance(spec, dict) or not isinstance(spec.get("type"), str):
            raise _fail(schema_path, f"variable {vname}: give 'type:' as a Spark SQL type, e.g. array<int>")
        if not isinstance(spec.get("itf", ""), str):
            raise _fail(schema_path, f"variable {vname}: 'itf:' must be a string such as set, fun(Clients) or seq")
        if spec.get("itf"):
            _check_itf_hint(schema_path, str(vname), spec["itf"], constants)
        variables.append(Variable(vname, spec["type"], spec.get("doc", ""), spec.get("tla", ""), spec.get("itf", ""),
                                  spec.get("symmetry")))
    clash = set(constants) & {v.name for v in variables}
    if clash:
        raise _fail(schema_path, f"{sorted(clash)} are both constants and variables")

    sql_dir = sql_dirs[0]
    if not any(d.is_dir() for d in sql_dirs):
        raise _fail(schema_path, f"no SQL folder {sql_dir}")
    init_name = data.get("init")
    if not isinstance(init_name, str) or not IDENT.match(init_name):
        raise _fail(schema_path, "'init:' must name the initial-state SQL file (e.g. Init)")
    action_names = _str_list(schema_path, data, "actions")
    if not action_names:
        raise _fail(schema_path, "'actions:' is empty")
    if len(action_names) > MAX_ACTIONS:
        raise _fail(schema_path, f"at most {MAX_ACTIONS} actions are supported")
    inv_names = _str_list(schema_path, data, "invariants", required=False)
    con_names = _str_list(schema_path, data, "constraints", required=False)
    asm_names = _str_list(schema_path, data, "assumes", required=False)
    fn_names = _str_list(schema_path, data, "functions", required=False)
    term_names = _str_list(schema_path, data, "terminal_findings", required=False)
    prop_names = _str_list(schema_path, data, "properties", required=False)
    all_names = [*fn_names, init_name, *action_names, *inv_names, *con_names, *asm_names, *term_names, *prop_names]
    dup = {n for n in all_names if all_names.count(n) > 1}
    if dup:
        raise _fail(schema_path, f"{sorted(dup)} named more than once among functions, init, actions, invariants, "
                                 "constraints, assumes, terminal_findings, properties")

    kinds = {n: "function" for n in fn_names} | {init_name: "init"} | {a: "action" for a in action_names}
    kinds |= {n: "invariant" for n in inv_names} | {n: "constraint" for n in con_names}
    kinds |= {n: "assumption" for n in asm_names} | {n: "terminal finding" for n in term_names}
    kinds |= {n: "property" for n in prop_names}
    _check_layout(sql_dir, schema_path, kinds)

    def find(n: str) -> Path:
        # Only in the folder of n's kind: a derived model's own folder first, then its bases' folders,
        # nearest first. A file of that name in another kind's folder is misplaced.
        kind = kinds[n]
        for d in sql_dirs:
            if _placed(d, kind, n).is_file():
                return _placed(d, kind, n)
        for d in sql_dirs:
            for folder in sorted(set(KIND_FOLDERS.values()) - {KIND_FOLDERS[kind]}):
                if (d / folder / f"{n}.sql").is_file():
                    raise _misplaced(d / folder / f"{n}.sql", n, kind, d)
        return _placed(sql_dir, kind, n)

    functions = [_read_sql(find(n), n, "function", schema_path) for n in fn_names]
    terminals = {t: _read_sql(find(t), t, "terminal finding", schema_path) for t in term_names}
    init = _read_sql(find(init_name), init_name, "init", schema_path)
    actions = [_read_sql(find(a), a, "action", schema_path) for a in action_names]
    invariants = {i: _read_sql(find(i), i, "invariant", schema_path) for i in inv_names}
    constraints = {c: _read_sql(find(c), c, "constraint", schema_path) for c in con_names}
    assumptions = {a: _read_sql(find(a), a, "assumption", schema_path) for a in asm_names}
    properties = {n: _read_property(find(n), n, schema_path, action_names) for n in prop_names}

    order = data.get("successor_order", "action_first")
    if order not in SUCCESSOR_ORDERS:
        raise _fail(schema_path, f"'successor_order:' must be one of {SUCCESSOR_ORDERS}")
    symmetry = _str_list(schema_path, data, "symmetry", required=False)
    for s in symmetry:
        if s not in constants or constants[s].type != "set<model_value>":
            raise _fail(schema_path, f"symmetry set {s} must be a constant of type set<model_value>")
    from engine.search.symmetry import parse_shape
    shaped = [v.name for v in variables if v.symmetry is not None]
    if shaped and not symmetry:
        raise _fail(schema_path, f"variables {shaped} declare 'symmetry:' but the model "
                                 "declares no 'symmetry:' sets")
    shapes = {v.name: parse_shape(schema_path, v.name, v.symmetry, symmetry)
              for v in variables if v.symmetry is not None}

    configurations = data.get("configurations") or {}
    if not isinstance(configurations, dict) or not configurations:
        raise _fail(schema_path, "'configurations:' must name at least one configuration")
    model_stub = dict(constants=constants, invariants=inv_names, constraints=con_names, properties=prop_names,
                      actions=action_names)
    for cfg_name, cfg in configurations.items():
        _check_config(schema_path, str(cfg_name), cfg, model_stub)
    default_cfg = data.get("default_configuration", next(iter(configurations)))
    if default_cfg not in configurations:
        raise _fail(schema_path, f"'default_configuration:' {default_cfg!r} is not under configurations")

    digest = hashlib.sha256()
    for p in schema_paths:  # a base's schema is part of the derived model
        digest.update(p.read_bytes())
    for f in [*functions, init, *actions, *invariants.values(), *constraints.values(), *assumptions.values(),
              *terminals.values()]:
        digest.update(f.name.encode() + b"\0" + f.text.encode())

    return Model(
        name=name, title=data.get("title", name), schema_path=schema_path, sql_dir=sql_dir,
        constants=constants, variables=variables, init=init, actions=actions,
        invariants=invariants, constraints=constraints, configurations=configurations,
        default_configuration=default_cfg, successor_order=order, symmetry=symmetry,
        source=data.get("source") or {}, digest=digest.hexdigest(), assumptions=assumptions,
        abstract=bool(data.get("abstract", False)),
        extends=tuple(p.stem for p in schema_paths[1:]), sql_dirs=tuple(sql_dirs),
        functions=functions, terminal_findings=terminals, symmetry_shapes=shapes, properties=properties,
    )


def _placed(sql_dir: Path, kind: str, name: str) -> Path:
    """Where a SQL file of this kind and name belongs in a model's folder."""
    folder = KIND_FOLDERS[kind]
    return (sql_dir / folder if folder else sql_dir) / f"{name}.sql"


def _misplaced(path: Path, name: str, kind: str, sql_dir: Path) -> ModelError:
    return _fail(path, f"{name} is {_KIND_NAMED[kind]}: move it to {_placed(sql_dir, kind, name)}")


def _check_layout(sql_dir: Path, schema_path: Path, kinds: dict[str, str]) -> None:
    """The model's own SQL folder: the init and action files at its top, every other kind in its own
    subfolder (KIND_FOLDERS), and no SQL file the schema does not declare."""
    if not sql_dir.is_dir():
        return
    folders = sorted({f for f in KIND_FOLDERS.values() if f})
    where = ", ".join(f"{f}/" for f in folders)
    for p in sorted(sql_dir.rglob("*.sql")):
        rel = p.parent.relative_to(sql_dir)
        if rel.parts and (len(rel.parts) > 1 or rel.parts[0] not in folders):
            raise _fail(p, f"is in a folder the loader does not read; the init and action files sit in "
                           f"{sql_dir}, the other kinds in its subfolders {where}: move it or remove it")
    for folder in ["", *folders]:
        d = sql_dir / folder if folder else sql_dir
        if not d.is_dir():
            continue
        stray = []
        for p in sorted(d.glob("*.sql")):
            kind = kinds.get(p.stem)
            if kind is None:
                stray.append(p.name)
            elif KIND_FOLDERS[kind] != folder:
                raise _misplaced(p, p.stem, kind, sql_dir)
        if stray:
            keys = "init or actions" if not folder else \
                " or ".join(sorted({_KIND_KEYS[k] for k, f in KIND_FOLDERS.items() if f == folder}))
            raise _fail(d, f"SQL files {stray} are not declared in {schema_path.name}; list them under "
                           f"{keys}, or remove them")


def variable_shapes(model: Model) -> dict[str, Any]:
    """Each variable's ``itf:`` hint parsed (engine.traces.itf.Shape): how its values are written."""
    from engine.traces.itf import parse_shape
    return {v.name: parse_shape(v.itf, f"{model.schema_path}: variable {v.name}") for v in model.variables if v.itf}


def _check_itf_hint(path: Path, vname: str, hint: str, constants: dict[str, Constant]) -> None:
    from engine.traces.itf import parse_shape

    where = f"{path}: variable {vname}"
    try:
        shape = parse_shape(hint, where)
    except UsageError as exc:
        raise ModelError(str(exc)) from None
    stack = [shape]
    while stack:
        sh = stack.pop()
        if sh.kind == "fun" and (sh.domain not in constants or not constants[sh.domain].type.startswith("set<")):
            raise ModelError(f"{where}: itf hint fun({sh.domain}) must name a set constant")
        stack.extend([x for x in [sh.inner] if x] + list(sh.fields.values()))


def _check_config(path: Path, name: str, cfg: Any, model: dict) -> None:
    if not isinstance(cfg, dict):
        raise _fail(path, f"configuration {name} must be a mapping")
    unknown = set(cfg) - _CONFIG_KEYS
    if unknown:
        raise _fail(path, f"configuration {name}: unknown keys {sorted(unknown)}; allowed: {sorted(_CONFIG_KEYS)}")
    for cname, value in (cfg.get("constants") or {}).items():
        if cname not in model["constants"]:
            raise _fail(path, f"configuration {name} sets unknown constant {cname}")
        try:
            coerce_constant(model["constants"][cname], value)
        except UsageError as exc:
            raise _fail(path, f"configuration {name}: {exc}") from None
    for key in ("invariants", "constraints"):
        for n in cfg.get(key) or []:
            if n not in model[key]:
                raise _fail(path, f"configuration {name} lists unknown {key[:-1]} {n}; known: {model[key]}")
    for n in _config_list(path, name, cfg, "properties"):
        if n not in model["properties"]:
            raise _fail(path, f"configuration {name} lists unknown property {n}; known: {model['properties']}")
    try:
        parse_fairness(_config_list(path, name, cfg, "fairness"), model["actions"])
    except UsageError as exc:
        raise _fail(path, f"configuration {name}: {exc}") from None
    if "deadlock" in cfg and not isinstance(cfg["deadlock"], bool):
        raise _fail(path, f"configuration {name}: 'deadlock:' must be true or false")
    if "symmetry" in cfg and not isinstance(cfg["symmetry"], bool):
        raise _fail(path, f"configuration {name}: 'symmetry:' must be true or false")


def _config_list(path: Path, name: str, cfg: dict, key: str) -> list[str]:
    value = cfg.get(key) or []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _fail(path, f"configuration {name}: '{key}:' must be a list of strings, got {value!r}")
    return value



def _read_property(path: Path, name: str, schema_path: Path, actions: list[str]) -> Property:
    """A property file: comment lines naming the operator it translates and the directives
    ``-- form: F`` (one of FORMS) and, optionally, ``-- fairness: weak, strong:Action`` (fairness the
    formula carries itself); then one boolean SQL expression over a state, or for ``~>`` two separated
    by a line holding only ``~>``."""
    f = _read_sql(path, name, "property", schema_path)
    form, fairness, body, header = None, [], [], True
    for line in f.text.splitlines():
        stripped = line.strip()
        if header and (stripped.startswith("--") or not stripped):
            m = _DIRECTIVE.match(stripped)
            if m and m.group(1).lower() == "form":
                form = re.sub(r"\s+", " ", m.group(2).strip())
            elif m:
                fairness += [x.strip() for x in m.group(2).split(",") if x.strip()]
            body.append("")  # keep line numbers
            continue
        header = False
        body.append(line)
    if form is None:
        raise _fail(path, f"a property file names its form in a comment line '-- form: F' before its SQL, "
                          f"F one of {', '.join(FORMS)}")
    if form not in FORMS:
        raise _fail(path, f"form {form!r} is not one of {', '.join(FORMS)}")
    try:
        fairness = parse_fairness(fairness, actions)
    except UsageError as exc:
        raise _fail(path, str(exc)) from None
    text = "\n".join(body)
    parts = re.split(r"(?m)^[ \t]*~>[ \t]*$", text)
    want = 2 if form == "~>" else 1
    if len(parts) != want:
        raise _fail(path, "a '~>' property holds two SQL expressions separated by a line '~>'" if want == 2 else
                          f"a '{form}' property holds one SQL expression (a line '~>' is for the form ~>)")
    preds = []
    for i, part in enumerate(parts):
        if not part.strip() or all(ln.strip().startswith("--") or not ln.strip() for ln in part.splitlines()):
            raise _fail(path, "holds no SQL" if want == 1 else f"the {'first' if i == 0 else 'second'} "
                              "expression of the '~>' property is empty")
        # Each predicate keeps the file's earlier lines blank, so Spark's line numbers are the file's.
        offset = "\n" * (text.count("\n", 0, text.index(part)) if i else 0)
        preds.append(SqlFile(name=name, kind="property", path=path, text=offset + part))
    return Property(name, form, tuple(preds), tuple(fairness), f)


def parse_fairness(items: list[str], actions: list[str]) -> list[str]:
    """Fairness conditions as the command line and configurations give them: ``weak`` (WF_vars(Next)),
    ``strong`` (SF_vars(Next), the same as weak on a finite state graph), ``weak:Action`` and
    ``strong:Action`` (WF_vars / SF_vars of one action of Next). Each in canonical form, once, in order."""
    out: list[str] = []
    if [re.sub(r"\s+", "", str(i)) for i in items] == ["none"]:
        return out  # no fairness (replacing a configuration's)
    for item in items:
        text = re.sub(r"\s+", "", str(item))
        m = _FAIRNESS_ITEM.match(text)
        if not m:
            raise UsageError(f"fairness {item!r}: write weak (WF_vars(Next)), strong (SF_vars(Next)), "
                             f"weak:ACTION, strong:ACTION, or none alone")
        if m.group(2) is not None and m.group(2) not in actions:
            raise UsageError(f"fairness {item!r}: {m.group(2)} is not an action of the model "
                             f"(actions: {', '.join(actions)})")
        if text not in out:
            out.append(text)
    return out


def _split_set(text: str) -> list[str]:
    text = text.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    return [t.strip() for t in text.split(",") if t.strip()]


def coerce_constant(const: Constant, value: Any) -> Any:
    """Check a constant's value (from YAML or from ``--set``) and return it in canonical form."""
    t = const.type

    def bad(expected: str) -> UsageError:
        return UsageError(f"constant {const.name} has type {t}: {value!r} is not {expected}")

    if t == "int":
        if isinstance(value, bool):
            raise bad("an integer")
        if isinstance(value, int):
            return value
        if isinstance(value, str) and INT.match(value.strip()):
            return int(value)
        raise bad("an integer")
    if t == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip() in ("TRUE", "FALSE"):
            return value.strip() == "TRUE"
        raise bad("TRUE or FALSE")
    if t == "model_value":
        if isinstance(value, str) and MODEL_VALUE.match(value.strip()):
            return value.strip()
        raise bad("a model value (a name such as c1)")
    if t.startswith("set<"):
        items = _split_set(value) if isinstance(value, str) else value
        if not isinstance(items, list):
            raise bad("a set, written a,b,c")
        out = []
        for item in items:
            if t == "set<int>":
                if isinstance(item, bool) or not (isinstance(item, int) or (isinstance(item, str) and INT.match(item))):
                    raise bad("a set of integers, written 1,2,3")
                out.append(int(item))
            else:
                if not (isinstance(item, str) and MODEL_VALUE.match(item)):
                    raise bad("a set of model values, written c1,c2")
                out.append(item)
        return sorted(set(out))
    raise bad(t)  # pragma: no cover - types are checked at load


def resolve_run(
    model: Model,
    config: str | None = None,
    sets: list[str] | None = None,
    invariants: list[str] | None = None,
    deadlock: bool | None = None,
    extra: dict[str, Any] | None = None,
    symmetry: bool | None = None,
    properties: list[str] | None = None,
    fairness: list[str] | None = None,
    keep_edges: bool = False,
) -> RunSpec:
    """Apply a named configuration, then ``--set`` overrides and ``--invariant``, ``--property`` and
    ``--fairness`` choices (each list given replaces the configuration's)."""
    if model.abstract:
        raise UsageError(f"model {model.name} is abstract ({model.schema_path} says 'abstract: true'): "
                         f"it is a base for other models and cannot be checked on its own")
    cfg_name = config or model.default_configuration
    if cfg_name not in model.configurations:
        raise UsageError(f"model {model.name} has no configuration '{cfg_name}' "
                         f"(configurations: {', '.join(model.configurations)})")
    cfg = model.configurations[cfg_name]
    constants = {n: c.default for n, c in model.constants.items()}
    for n, v in (cfg.get("constants") or {}).items():
        constants[n] = coerce_constant(model.constants[n], v)
    for item in sets or []:
        if "=" not in item:
            raise UsageError(f"--set expects CONST=VALUE, got {item!r}")
        n, v = item.split("=", 1)
        n = n.strip()
        if n not in model.constants:
            raise UsageError(f"model {model.name} has no constant '{n}' "
                             f"(constants: {', '.join(model.constants) or 'none'})")
        constants[n] = coerce_constant(model.constants[n], v)
    inv = list(cfg.get("invariants", list(model.invariants)))
    if invariants:
        for i in invariants:
            if i not in model.invariants:
                raise UsageError(f"model {model.name} has no invariant '{i}' "
                                 f"(invariants: {', '.join(model.invariants) or 'none'})")
        inv = list(dict.fromkeys(invariants))
    cons = list(cfg.get("constraints", list(model.constraints)))
    dl = cfg.get("deadlock", True) if deadlock is None else deadlock
    # SYMMETRY is on where the model declares symmetry sets, unless the configuration or the run
    # turns it off (--no-symmetry).
    sym = bool(model.symmetry) and cfg.get("symmetry", True) and symmetry is not False
    props = list(dict.fromkeys(properties)) if properties else list(cfg.get("properties") or [])
    for n in props:
        if n not in model.properties:
            raise UsageError(f"model {model.name} has no property '{n}' "
                             f"(properties: {', '.join(model.properties) or 'none'})")
    fair_items = fairness if fairness else cfg.get("fairness") or []  # (--fairness none: no fairness)
    fair = parse_fairness([fair_items] if isinstance(fair_items, str) else fair_items, model.action_names)
    if fairness and not props:
        raise UsageError("--fairness applies to liveness properties: name one with --property "
                         f"(properties of {model.name}: {', '.join(model.properties) or 'none'})")
    if props and sym:
        raise UsageError(f"liveness properties ({', '.join(props)}) cannot be checked under symmetry: "
                         f"TLC warns that the two together are unsound, and a lasso of orbits need not be one "
                         f"of states; turn symmetry off with --no-symmetry (or 'symmetry: false' in the "
                         f"configuration)")
    if keep_edges and sym:
        raise UsageError("--keep-edges: the edges are kept for liveness properties, which cannot be checked "
                         "under symmetry; turn symmetry off with --no-symmetry")
    return RunSpec(model=model, config=cfg_name, constants=constants, invariants=inv,
                   constraints=cons, deadlock=bool(dl), extra=dict(extra or {}), symmetry=sym,
                   properties=props, fairness=fair, edges=bool(props) or keep_edges)


def parse_case(text: str) -> tuple[str, str | None, list[str]]:
    """A case as the benchmark and ``serve --warm`` name one, ``MODEL[:CONFIG][+CONST=VALUE...]``:
    (model, configuration or None, the ``--set`` overrides)."""
    head, *sets = text.split("+")
    model, _, config = head.partition(":")
    return model, config or None, sets
