"""Every setting of the engine, in one frozen object read once from the environment and the command line.

A setting is a field of ``Settings`` with its environment variable (``SSE_<NAME>``), its default and
what it trades. Nothing else in the engine reads ``SSE_*`` variables: a command builds one Settings
(``Settings.from_env()``, then the command line's options), and the search, the Spark session and the
stores take it as an argument. Tests pass settings; they do not patch module globals.

    from engine.settings import Settings
    s = Settings.from_env()                       # SSE_* variables over the defaults
    s = s.replace(master="local[1]")              # a changed copy
    Settings.parse_assignments(["rows_per_partition=10"], s)   # the command line's --setting NAME=VALUE

docs/architecture.md lists every setting (``python -m engine settings`` prints them with their values).
"""
from __future__ import annotations

import dataclasses
import os
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from engine.errors import UsageError

__all__ = ["Settings", "ENV_PREFIX", "describe"]

ENV_PREFIX = "SSE_"
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def _setting(default: Any, doc: str, *, group: str, env: str | None = None, choices: tuple[str, ...] = ()):
    return field(default=default, metadata={"doc": doc, "group": group, "env": env, "choices": choices})


# The JVM's defaults for a local search: the parallel (throughput) collector, since a search is a batch
# job and on 2 cores G1's concurrent work competes with the tasks; and the optimizing compiler (C2)
# waiting for more invocations than HotSpot's default, so that Spark's once-only start-up code does
# not take a core from the first levels while the actions' per-row code still reaches C2.
JAVA_OPTIONS = ("-XX:+UseParallelGC -XX:Tier4InvocationThreshold=50000 -XX:Tier4MinInvocationThreshold=6000 "
                "-XX:Tier4CompileThreshold=150000 -XX:Tier4BackEdgeThreshold=400000")


@dataclass(frozen=True)
class Settings:
    # ---- where things are ------------------------------------------------------------------------
    models: Path | None = _setting(None, "the folder holding schemas/ and actions_sql/ (default: this checkout, "
                                   "else the current folder)", group="paths")
    warehouse: Path | None = _setting(None, "where runs write their Delta tables (default: warehouse/ beside the "
                                      "models)", group="paths")
    server: str = _setting("", "the engine server's Unix socket (default: <cache>/sse/server.sock); off: never "
                           "hand commands to a server", group="paths")
    # ---- Spark ------------------------------------------------------------------------------------
    master: str = _setting("local[2]", "the Spark master of a session the engine starts (local[N], spark://...)",
                           group="spark", env="SSE_SPARK_MASTER")
    remote: str = _setting("", "a Spark Connect server to run on (sc://HOST:PORT): the portable path, through "
                           "Spark Connect (Databricks serverless and standard clusters)", group="spark",
                           env="SSE_SPARK_REMOTE")
    connect_wait: int = _setting(600, "seconds a Spark Connect client keeps retrying a server it cannot reach "
                                 "(a restart, a network cut) before the command stops with exit 3; a run stopped "
                                 "so resumes from its last committed level", group="spark")
    shuffle_partitions: int = _setting(4, "spark.sql.shuffle.partitions: a level is often a few hundred rows, and "
                                       "Spark's 200 would be 200 tasks of nothing", group="spark")
    driver_memory: str = _setting("6g", "spark.driver.memory of a session the engine starts (local mode runs the "
                                  "tasks in the driver's JVM)", group="spark")
    storage_fraction: str = _setting("0.1", "spark.memory.storageFraction: a level's checkpoints give way to the "
                                     "de-duplication's sorts down to this share of Spark's memory", group="spark")
    codegen_cache: int = _setting(10000, "spark.sql.codegen.cache.maxEntries: a model's union of actions compiles "
                                  "hundreds of classes, and with Spark's 100 each level compiled them again",
                                  group="spark")
    huge_method_limit: int = _setting(8000, "spark.sql.codegen.hugeMethodLimit: HotSpot never compiles a method "
                                      "past 8,000 bytes of bytecode; above it Spark compiles operators one by one",
                                      group="spark")
    explain_mode: str = _setting("simple", "spark.sql.ui.explainMode: the plan text every SQL execution posts "
                                 "(the formatted one cost time on every small level)", group="spark")
    rdd_compress: bool = _setting(False, "spark.rdd.compress: a level's checkpoints, kept serialized, are also "
                                  "compressed (less memory and disk for a large level's successors, for CPU)",
                                  group="spark")
    spark_ui: bool = _setting(False, "Spark's web UI (off: a search is a batch job)", group="spark")
    java_options: str = _setting(JAVA_OPTIONS, "the driver JVM's options (collector and JIT thresholds for a batch "
                                 "search)", group="spark")
    event_log: Path | None = _setting(None, "a folder for Spark's event log (jobs, stages and tasks with their "
                                      "times), uncompressed", group="spark")
    # ---- how states are encoded and stored --------------------------------------------------------
    fingerprint: str = _setting("row-bytes", "how a state is fingerprinted: row-bytes (two xxhash64 of Spark's "
                                "binary row, needs the engine's JVM helper) or json (of the state as JSON text, "
                                "public SQL only)", group="storage", choices=("row-bytes", "json"))
    delta: str = _setting("auto", "how Delta tables are read and written: auto (the JVM connector where it is on "
                          "the classpath, else delta-rs), native, or delta-rs", group="storage",
                          choices=("auto", "native", "delta-rs"))
    jvm_ext: Path | None = _setting(None, "where the engine's compiled JVM helpers are kept (default: the engine's "
                                    "cache folder, ~/.cache/sse)", group="storage")
    # ---- the search: which path runs ---------------------------------------------------------------
    path: str = _setting("auto", "which implementation of the search runs: auto (the local accelerator in classic "
                         "local mode with the engine's JVM helpers, else the portable path), portable (public "
                         "Spark APIs alone, anywhere), or accelerated", group="search",
                         choices=("auto", "portable", "accelerated"))
    disabled_helpers: str = _setting("", "the engine's JVM helpers the accelerator must not use, comma separated "
                                     "(RowBytes, SeenSet, SortedSeen, SwitchRows, ArrowFrontier, Canonical): each "
                                     "such stage runs as on the portable path", group="search")
    # ---- the accelerator: which path a level takes ------------------------------------------------
    level_path: str = _setting("auto", "where a level's successors are finished: auto (on the driver as Arrow "
                               "when the level fits arrow_level_bytes, else in Spark), driver, spark, or alternate "
                               "(odd depths on the driver: for tests)", group="search",
                               choices=("auto", "driver", "spark", "alternate"))
    arrow_level_bytes: int = _setting(768 << 20, "a level expected to take at most this many bytes as Arrow is "
                                      "collected to the driver and finished there (the accelerator: its "
                                      "successors; the portable path: its new states); above, it stays in Spark. "
                                      "Bounds the driver's memory whatever the state space", group="search")
    narrow_on_driver: int = _setting(4_000_000, "a Spark level with at most this many successors has its narrow "
                                     "columns (fingerprint, order key, row id) de-duplicated and anti-joined on the "
                                     "driver; above, in Spark", group="search")
    slice_successors: int = _setting(16_000_000, "a Spark level expected to generate more successors than this "
                                     "is expanded in slices of its frontier (ranges of _ord, in order), each with "
                                     "about this many: the level's disk peak is a slice's, and its figures and "
                                     "order are those of the whole level (0: never sliced)", group="search")
    driver_seen_max: int = _setting(4_000_000, "the driver keeps the seen fingerprints (16 bytes each) while the "
                                    "run has fewer than this many states; beyond, the anti-join runs in Spark",
                                    group="search")
    rows_per_partition: int = _setting(100_000, "a Spark level's shuffles get a partition per this many "
                                       "successors (at least shuffle_partitions)", group="search")
    broadcast_rows: int = _setting(10_000_000, "a Spark level's picked rows are fetched by a broadcast join up to "
                                   "this many, by a shuffled join beyond", group="search")
    refetch_from: int = _setting(500_000, "on the portable path, a level expected to generate at least this many "
                                 "successors keeps them as narrow columns and makes its new states whole by expanding "
                                 "their parents again; a smaller one keeps every successor whole (the second "
                                 "expansion is planned anew each level) (0: always)", group="search")
    inline_annotation: int = _setting(1_000_000, "up to this many expected successors the constraint and invariants "
                                      "are evaluated in the actions' job, on every successor; above, on the new "
                                      "states in a job of their own", group="search")
    annotate_blanked_inline: bool = _setting(True, "where repeats are blanked in the actions' job, evaluate the "
                                             "constraint and invariants there whatever the level's size",
                                             group="search")
    interpret_below: int = _setting(2000, "a level expected to generate at most this many successors runs its Spark "
                                    "jobs interpreted: generating and compiling code costs more than it saves there",
                                    group="search")
    pipeline: bool = _setting(True, "write, validate and commit a driver level on a thread of its own while the next "
                              "level's actions run", group="search")
    validate_batch: bool = _setting(True, "validate consecutive small levels in one Great Expectations run",
                                    group="search")
    validate_batch_levels: int = _setting(8, "at most this many levels in one batched validation", group="search")
    defer_write: bool = _setting(True, "write a Spark level once the next level's narrow columns are on the driver, "
                                 "where no job runs", group="search")
    spark_by_part: bool = _setting(True, "a Spark level runs one task per frontier partition, every action over it",
                                   group="search")
    spread_skew: float = _setting(0.05, "new states stay in the partitions they were found in while the largest "
                                  "holds at most this much more than an equal share", group="search")
    hold_spark: bool = _setting(True, "Spark levels run the actions' union planned once per run (the JVM helper "
                                "SwitchRows); not under symmetry, whose Spark levels plan it each level",
                                group="search")
    shared_leaf: bool = _setting(True, "small and Spark levels run the same planned union, so its code is "
                                 "generated and compiled once", group="search")
    fixed_plan: bool = _setting(True, "small levels run the actions' union planned once per run, not planned again "
                                "each level", group="search")
    keep_plans: bool = _setting(True, "a run's planned union is kept when it ends, for the next run of the same "
                                "model, configuration and settings in this process (an engine server's next command)",
                                group="search")
    frontier: str = _setting("arrow", "how a small level's frontier reaches the planned union: arrow (the JVM helper "
                             "ArrowFrontier) or json", group="search", choices=("arrow", "json"))
    by_part: bool = _setting(True, "the planned union runs each frontier part's actions as one task",
                             group="search")
    frontier_as_objects: int = _setting(1_000_000, "a level's new states up to this many are checkpointed as row "
                                        "objects (read again by every action), beyond serialized", group="search")
    successors_as_objects: int = _setting(4_000_000, "a Spark level's successors up to this many are checkpointed "
                                          "as row objects", group="search")
    planning_threads: int = _setting(0, "threads planning the actions' union (0: one a core)", group="search")
    # ---- the search: the seen states --------------------------------------------------------------
    seen_filter: bool = _setting(True, "the seen fingerprints held in the tasks' JVM (the JVM helper SeenSet), so "
                                 "the actions' job sends the driver whole rows of new states only", group="seen")
    level_filter: bool = _setting(True, "blank repeats within a level in the actions' job too", group="seen")
    seen_filter_call_max: int = _setting(1 << 12, "up to this many seen fingerprints go to the tasks' JVM in one "
                                         "call, through a file beyond", group="seen")
    sorted_seen: bool = _setting(True, "the Spark anti-join's seen index as sorted runs (the JVM helper SortedSeen)",
                                 group="seen")
    index_from: int = _setting(1_000_000, "a Spark level anti-joins against the seen index once the run has this "
                               "many states; below, against the stored levels", group="seen")
    max_fragments: int = _setting(8, "the seen index merges its fragments past this many", group="seen")
    min_partitions: int = _setting(16, "the seen index has at least this many partitions",
                                   group="seen")
    run_max: int = _setting(8_000_000, "a sorted run of the seen index holds at most this many fingerprints a "
                            "partition before it is split", group="seen")
    pending_max: int = _setting(1_000_000, "committed fingerprints held on the driver until this many are made one "
                                "fragment of the seen index", group="seen")
    here_max: int = _setting(100_000, "a driver level looks its states up in the seen index in the driver's JVM up "
                             "to this many, by a job beyond", group="seen")
    # ---- symmetry ---------------------------------------------------------------------------------
    literal_permutations: int = _setting(24, "symmetry: up to this many permutations are written into the "
                                         "canonicalization's SQL as literals; beyond, generated in SQL",
                                         group="search")
    # ---- diagnostics ------------------------------------------------------------------------------
    profile: bool = _setting(False, "print each level's per-stage wall time on stderr", group="diagnostics")
    kill_at: str = _setting("", "crash test: kill this process with SIGKILL at this point of a level's commit "
                            "(for tests of resume)", group="diagnostics")
    hold_at: str = _setting("", "crash test: stop at this point of a level's commit until the process is killed",
                            group="diagnostics")

    # ---- reading and writing settings -------------------------------------------------------------
    @staticmethod
    def env_name(name: str) -> str:
        f = _FIELDS[name]
        return f.metadata["env"] or ENV_PREFIX + name.upper()

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> "Settings":
        """The defaults, with each ``SSE_<NAME>`` variable of ``environ`` (the process's) over them, then
        ``overrides`` (already typed values) over those."""
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for name in _FIELDS:
            raw = environ.get(cls.env_name(name))
            if raw is not None and raw.strip() != "":
                values[name] = _parse(name, raw, cls.env_name(name))
        values.update({k: v for k, v in overrides.items() if v is not None})
        unknown = set(values) - set(_FIELDS)
        if unknown:
            raise UsageError(f"unknown settings {sorted(unknown)}")
        return cls(**values)

    def replace(self, **changes: Any) -> "Settings":
        unknown = set(changes) - set(_FIELDS)
        if unknown:
            raise UsageError(f"unknown settings {sorted(unknown)}; see python -m engine settings")
        return dataclasses.replace(self, **changes)

    @classmethod
    def parse_assignments(cls, items: list[str], base: "Settings") -> "Settings":
        """``base`` with each ``NAME=VALUE`` of the command line's ``--setting`` applied."""
        changes = {}
        for item in items:
            name, sep, raw = item.partition("=")
            name = name.strip().lower().replace("-", "_")
            if not sep or not name:
                raise UsageError(f"--setting expects NAME=VALUE, got {item!r}")
            if name not in _FIELDS:
                raise UsageError(f"--setting {item}: no setting {name!r} (settings: {', '.join(_FIELDS)})")
            changes[name] = _parse(name, raw, f"--setting {name}")
        return base.replace(**changes)

    def changed(self) -> dict[str, Any]:
        """The settings that differ from the defaults, by name."""
        default = Settings()
        return {n: getattr(self, n) for n in _FIELDS if getattr(self, n) != getattr(default, n)}

    def to_env(self) -> dict[str, str]:
        """The environment that gives these settings to another process (only those changed)."""
        return {self.env_name(n): _format(v) for n, v in self.changed().items()}


def _field_type(name: str) -> Any:
    hint = _HINTS[name]
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return args[0]
    return hint


def _parse(name: str, raw: str, where: str) -> Any:
    kind = _field_type(name)
    text = raw.strip()
    choices = _FIELDS[name].metadata["choices"]
    try:
        if kind is bool:
            if text.lower() in _TRUE:
                return True
            if text.lower() in _FALSE:
                return False
            raise ValueError("expected 1 or 0 (true/false, on/off)")
        if kind is int:
            return int(text.replace("_", ""))
        if kind is float:
            return float(text)
        if kind is Path:
            return Path(text).expanduser()
        value = text.lower() if choices else text
        if choices and value not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}")
        return value
    except ValueError as exc:
        msg = str(exc) if "expected" in str(exc) else f"expected {kind.__name__}"
        raise UsageError(f"{where}={raw!r}: {msg}") from None


def _format(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def describe() -> list[dict[str, Any]]:
    """Every setting: name, environment variable, default, group and what it trades."""
    out = []
    for name, f in _FIELDS.items():
        out.append({"name": name, "env": Settings.env_name(name), "default": f.default, "group": f.metadata["group"],
                    "doc": f.metadata["doc"], "choices": f.metadata["choices"]})
    return out


_FIELDS = {f.name: f for f in dataclasses.fields(Settings)}
_HINTS = typing.get_type_hints(Settings)
