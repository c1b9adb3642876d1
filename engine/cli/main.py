"""Command line: ``python -m engine check|models|audit|replay|sql|report|serve|settings`` (also
installed as ``sse``).

The settings (engine.settings) are read once here: the ``SSE_*`` environment, then ``--models``,
``--warehouse``, ``--master`` and ``--setting NAME=VALUE``; every command takes them as an argument.
The commands that start Spark are handed to a running engine server when there is one
(engine.platform.server: ``python -m engine serve``); ``--no-server`` runs them in this process."""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import traceback
from pathlib import Path

from engine.errors import (EXIT_DEADLOCK, EXIT_ILLEGAL_TRACE, EXIT_INTERNAL, EXIT_LIVENESS, EXIT_OK,
                           EXIT_SPARK_LOST, EXIT_VIOLATION, EngineError, UsageError, spark_lost)
import engine.cli.client as client
from engine.search.control import INTERRUPTED, stop_requested
from engine.model.loader import default_models_root, list_models, load_model, resolve_run, variable_shapes
from engine.model.values import format_constant
from engine.settings import Settings, describe

__all__ = ["main", "build_parser"]

RESULT_EXIT = {"ok": EXIT_OK, "invariant_violated": EXIT_VIOLATION, "deadlock": EXIT_DEADLOCK,
               "property_violated": EXIT_LIVENESS}


def command_settings(args: argparse.Namespace, base: Settings) -> Settings:
    """The settings a command runs with: ``base`` (the ``SSE_*`` environment), then its options."""
    settings = Settings.parse_assignments(getattr(args, "settings", []) or [], base)
    changes = {}
    if args.models is not None:
        changes["models"] = args.models
    if getattr(args, "warehouse", None) is not None:
        changes["warehouse"] = args.warehouse
    if getattr(args, "master", None):
        changes["master"] = args.master
    if getattr(args, "remote", None):
        changes["remote"] = args.remote
    settings = settings.replace(**changes) if changes else settings
    if settings.remote and (getattr(args, "master", None) or settings.master != Settings().master):
        raise UsageError(f"--remote {settings.remote} and --master {settings.master} name two Sparks: a Spark "
                         "Connect server runs with its own master; give one of them")
    return settings


def _warehouse(settings: Settings) -> Path:
    from engine.store.runs import default_warehouse
    return default_warehouse(settings)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # bad arguments are bad input: exit 2 with the reason
        self.print_usage(sys.stderr)
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m engine", description="Relational state-space engine: TLA+-style models "
                "checked breadth-first on Spark, every state a row in a Delta table.")
    p.add_argument("--models", type=Path, default=None, help="folder with schemas/ and actions_sql/ "
                   "(default: this checkout, or $SSE_MODELS)")
    p.add_argument("--setting", dest="settings", action="append", default=[], metavar="NAME=VALUE",
                   help="set one of the engine's settings for this command (repeatable; "
                        "python -m engine settings lists them)")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    c = sub.add_parser("check", help="check a model: breadth-first search of every reachable state")
    c.add_argument("model")
    c.add_argument("--config", help="named configuration from the model's schema (default: its default)")
    c.add_argument("--set", dest="sets", action="append", default=[], metavar="CONST=VALUE",
                   help="override a constant: Clients=c1,c2  KeySpace=1,2  Flag=TRUE  Limit=5")
    c.add_argument("--invariant", dest="invariants", action="append", default=[], metavar="NAME",
                   help="check this invariant (repeatable); replaces the configuration's list")
    c.add_argument("--no-deadlock", action="store_true", help="do not report deadlocks (TLC's -deadlock)")
    c.add_argument("--no-symmetry", action="store_true",
                   help="count states that differ by a permutation of the symmetry sets apart")
    c.add_argument("--property", dest="properties", action="append", default=[], metavar="NAME",
                   help="check this liveness property after the search, over the stored state graph "
                        "(repeatable); replaces the configuration's list")
    c.add_argument("--fairness", action="append", default=[], metavar="weak|weak:ACTION|strong:ACTION",
                   help="fairness for the properties: weak is WF_vars(Next); weak:A / strong:A is WF_vars(A) / "
                        "SF_vars(A) for one action (repeatable); replaces the configuration's")
    c.add_argument("--keep-edges", action="store_true",
                   help="store the state graph's edges even without a property, so that the finished run can be "
                        "checked for properties later (check ... --keep-edges --property NAME reuses it)")
    c.add_argument("--warehouse", type=Path, default=None, help="where the Delta tables go (default: warehouse/)")
    c.add_argument("--master", default=None, help="Spark master (default: local[2] or $SSE_SPARK_MASTER)")
    c.add_argument("--remote", default=None, metavar="sc://HOST:PORT",
                   help="run on a Spark Connect server (the portable path; default: $SSE_SPARK_REMOTE)")
    c.add_argument("--json", action="store_true", help="print exactly one JSON object on stdout")
    c.add_argument("--fresh", action="store_true", help="discard this run's earlier tables and start over")
    c.add_argument("--quiet", action="store_true", help="no per-level progress on stderr")
    c.add_argument("--itf", type=Path, default=None, metavar="FILE",
                   help="also write a counterexample to FILE in the Informal Trace Format (Apalache, Quint); "
                        "it is always written beside the run's tables as trace.itf.json")

    r = sub.add_parser("replay", help="check that a stored trace is a succession of legal transitions of a model")
    r.add_argument("trace", help="an ITF file (.itf.json), a TLC error trace with --tlc, or a run id / run folder")
    r.add_argument("--model", help="the model to replay against (default: the one the ITF file or run names)")
    r.add_argument("--config", help="named configuration for the constants (default: the trace's own constants)")
    r.add_argument("--set", dest="sets", action="append", default=[], metavar="CONST=VALUE")
    r.add_argument("--invariant", dest="invariants", action="append", default=[], metavar="NAME",
                   help="evaluate this invariant on every state (repeatable; default: the configuration's)")
    r.add_argument("--tlc", action="store_true", help="the trace is TLC's text output (State n: <Action ...>)")
    r.add_argument("--warehouse", type=Path, default=None, help="where to look a run id up")
    r.add_argument("--master", default=None)
    r.add_argument("--remote", default=None, metavar="sc://HOST:PORT", help="a Spark Connect server")
    r.add_argument("--json", action="store_true")

    sub.add_parser("models", help="list the models, their constants and configurations")
    st = sub.add_parser("settings", help="list the engine's settings: name, environment variable, value, "
                        "and what each trades")
    st.add_argument("--json", action="store_true")
    st.add_argument("--markdown", action="store_true", help="the table docs/architecture.md holds")

    a = sub.add_parser("audit", help="run a finished run's invariant suite again over its whole states table")
    a.add_argument("run", help="run id, or the run's folder")
    a.add_argument("--warehouse", type=Path, default=None)
    a.add_argument("--master", default=None)
    a.add_argument("--remote", default=None, metavar="sc://HOST:PORT", help="a Spark Connect server")
    a.add_argument("--json", action="store_true")

    q = sub.add_parser("sql", help="ad-hoc Spark SQL over a run's tables (views states, levels, outcome, "
                       "trace; the model's constants as SQL variables)")
    q.add_argument("run", help="run id, or the run's folder")
    q.add_argument("query", help='e.g. "SELECT _depth, count(*) FROM states GROUP BY _depth"')
    q.add_argument("--warehouse", type=Path, default=None)
    q.add_argument("--master", default=None)
    q.add_argument("--remote", default=None, metavar="sc://HOST:PORT", help="a Spark Connect server")
    q.add_argument("--limit", type=int, default=1000, help="print at most this many rows (default 1000)")
    q.add_argument("--json", action="store_true", help="print one JSON object: columns, rows, truncated")

    s = sub.add_parser("serve", help="keep one Spark driver up and run the commands of other shells on it "
                       "(check, audit, replay, sql): no Spark start-up, compiled code kept warm")
    s.add_argument("--socket", type=Path, default=None,
                   help="the server's Unix socket (default: $SSE_SERVER, else <cache>/sse/server.sock)")
    s.add_argument("--master", default=None, help="Spark master (default: local[2] or $SSE_SPARK_MASTER)")
    s.add_argument("--warm", action="append", default=[], metavar="MODEL[:CONFIG][+CONST=VALUE...]",
                   help="check this once at start, into a folder thrown away, so that the first commands find "
                        "the JVM's code compiled (repeatable); commands sent meanwhile wait for it")
    s.add_argument("--idle-stop", type=float, default=None, metavar="MINUTES",
                   help="stop when no command came for this many minutes (default: never)")
    s.add_argument("--detach", action="store_true",
                   help="run the server in the background (its output in <socket>.log); return once it listens")
    what = s.add_mutually_exclusive_group()
    what.add_argument("--status", action="store_true", help="print the running server's pid, master and uptime")
    what.add_argument("--stop", action="store_true", help="stop the running server (after its current command)")

    for name in client.FORWARDED:
        sub.choices[name].add_argument("--no-server", action="store_true",
                                       help="run here even when an engine server is up (python -m engine serve)")

    r = sub.add_parser("report", help="write one HTML file about a run: constants, outcome, states per level, "
                       "actions, invariants, counterexample")
    r.add_argument("run", help="run id, or the run's folder")
    r.add_argument("--warehouse", type=Path, default=None)
    r.add_argument("--out", type=Path, default=None, help="the HTML file (default: <run folder>/report.html)")
    return p


def _cmd_settings(args, settings: Settings) -> int:
    rows = [{**d, "value": getattr(settings, d["name"])} for d in describe()]
    if args.json:
        print(json.dumps(rows, default=str))
        return EXIT_OK
    if args.markdown:
        print(settings_table())
        return EXIT_OK
    for r in rows:
        value = "" if r["value"] is None else r["value"]
        mark = "" if r["value"] == r["default"] else "   (changed)"
        print(f"{r['name']} = {value}{mark}\n    {r['env']}; {r['doc']}")
    return EXIT_OK


def settings_table() -> str:
    """Every setting as a Markdown table: name, environment variable, default, what it trades."""
    def shown(v) -> str:
        if v is None:
            return "(unset)"
        if v == "":
            return "(empty)"
        if isinstance(v, bool):
            return "`1`" if v else "`0`"
        return f"`{v}`"
    lines = ["| setting | environment variable | default | what it trades |", "|---|---|---|---|"]
    for d in describe():
        choices = f" One of {', '.join(d['choices'])}." if d["choices"] else ""
        lines.append(f"| `{d['name']}` | `{d['env']}` | {shown(d['default'])} | {d['doc']}.{choices} |")
    return "\n".join(lines)


def _cmd_models(args, settings: Settings) -> int:
    root = default_models_root(settings)
    for name in list_models(root):
        m = load_model(name, root)
        print(f"{m.name}: {m.title}" + ("  [abstract: a base for other models, not checked on its own]"
                                        if m.abstract else ""))
        if m.extends:
            print(f"  extends: {' -> '.join(m.extends)}")
        src = m.source
        if src:
            print(f"  source: {src.get('module', '')} ({src.get('repository', '')})")
        print("  constants:")
        for c in m.constants.values():
            print(f"    {c.name} : {c.type} = {format_constant(c.default)}" + (f"   -- {c.doc}" if c.doc else ""))
        print(f"  invariants: {', '.join(m.invariants) or '-'}")
        print(f"  constraints: {', '.join(m.constraints) or '-'}")
        print("  configurations:")
        for cname, cfg in m.configurations.items():
            mark = " (default)" if cname == m.default_configuration else ""
            consts = ", ".join(f"{k}={format_constant(v)}" for k, v in (cfg.get("constants") or {}).items())
            print(f"    {cname}{mark}: {consts}; invariants {cfg.get('invariants', list(m.invariants))}; "
                  f"deadlock {'on' if cfg.get('deadlock', True) else 'off'}")
    return EXIT_OK


def _cmd_check(args, settings: Settings) -> int:
    from engine.cli.output import Progress, format_summary

    model = load_model(args.model, default_models_root(settings))
    spec = resolve_run(model, args.config, args.sets, args.invariants or None,
                       False if args.no_deadlock else None,
                       symmetry=False if args.no_symmetry else None,
                       properties=args.properties or None, fairness=args.fairness or None,
                       keep_edges=args.keep_edges)
    warehouse = _warehouse(settings)
    from engine.search.loop import check
    from engine.store.runs import check_warehouse
    check_warehouse(warehouse)  # before Spark starts: a bad path costs nothing
    progress = Progress(quiet=args.quiet)
    try:
        outcome = check(spec, warehouse, settings=settings, progress=progress, fresh=args.fresh)
    finally:
        progress.close()
    if args.itf is not None and "itf" in outcome.tables:
        args.itf.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(outcome.tables["itf"], args.itf)
    if args.json:
        print(json.dumps(outcome.to_json()))
    else:
        print(format_summary(outcome, variable_shapes(model)))
    return RESULT_EXIT[outcome.result]


def _cmd_replay(args, settings: Settings) -> int:
    from engine.traces.replay import format_report, load_trace, replay, resolve_replay

    spec, states, source, loop = resolve_replay(args.trace, default_models_root(settings), model=args.model,
                                          config=args.config, sets=args.sets, tlc=args.tlc,
                                          warehouse=_warehouse(settings), invariants=args.invariants)
    from engine.search.expand import state_schema
    from engine.runtime.session import get_spark
    spark = get_spark(settings)
    rows = load_trace(spec, states, source, state_schema(spark, spec.model))
    report = replay(spark, spec, rows, loop)
    if args.json:
        print(json.dumps(report.to_json()))
    else:
        print(format_report(report))
    return EXIT_OK if report.legal else EXIT_ILLEGAL_TRACE


def _cmd_audit(args, settings: Settings) -> int:
    from engine.platform.audit import audit_run
    report = audit_run(args.run, _warehouse(settings), models_root=default_models_root(settings), settings=settings)
    if args.json:
        print(json.dumps(report))
    else:
        print(f"audit of run {report['run_id']} ({report['model']}): {'PASS' if report['success'] else 'FAIL'}")
        for check_name, ok, detail in report["checks"]:
            print(f"  [{'ok' if ok else 'FAIL'}] {check_name}: {detail}")
    return EXIT_OK if report["success"] else EXIT_VIOLATION


def _cmd_sql(args, settings: Settings) -> int:
    from engine.platform.sql import format_table, run_sql
    res = run_sql(args.run, args.query, _warehouse(settings), models_root=default_models_root(settings),
                  settings=settings, limit=args.limit)
    if args.json:
        print(json.dumps({k: v for k, v in res.items() if k not in ("shapes", "constants")}, default=str))
    else:
        print(format_table(res["columns"], res["rows"], res["shapes"], res["constants"]))
        if res["truncated"]:
            print(f"(only the first {args.limit} rows; use --limit)")
    return EXIT_OK


def _cmd_report(args, settings: Settings) -> int:
    from engine.platform.report import write_report
    print(write_report(args.run, _warehouse(settings), args.out, models_root=default_models_root(settings)))
    return EXIT_OK


def _cmd_serve(args, argv: list[str], settings: Settings, base: Settings) -> int:
    if client.in_server:
        raise UsageError("serve: this command cannot be sent to an engine server")
    if args.socket is not None:
        settings = settings.replace(server=str(args.socket.expanduser().absolute()))
    if args.status:
        return client.status(settings)
    if args.stop:
        return client.stop(settings)
    if args.idle_stop is not None and args.idle_stop <= 0:
        raise UsageError(f"--idle-stop {args.idle_stop:g}: a number of minutes above 0")
    path = client.socket_path(settings)
    if path is None:
        raise UsageError(f"{client.ENV} is off: name the server's socket with --socket PATH")
    from engine.platform import server
    if args.detach:
        return server.detach([a for a in argv if a != "--detach"], path, settings)
    return server.serve(path, settings, main, warm=args.warm, idle_stop=args.idle_stop * 60 if args.idle_stop else None,
                        base=base)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(argv)
        base = Settings.from_env()
        settings = command_settings(args, base)
        if args.command in client.FORWARDED and not args.no_server and not settings.remote:
            code = client.forward(argv, base, settings.master)
            if code is not None:
                return code
        if args.command == "serve":
            return _cmd_serve(args, argv, settings, base)
        commands = {"models": _cmd_models, "settings": _cmd_settings, "check": _cmd_check, "audit": _cmd_audit,
                    "replay": _cmd_replay, "sql": _cmd_sql, "report": _cmd_report}
        if args.command not in commands:
            raise UsageError(f"unknown command {args.command}")
        return commands[args.command](args, settings)
    except EngineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr)
        return 130
    except Exception as exc:
        if stop_requested(exc):  # (Ctrl-C, with a cancelled job's error raised over it)
            print(INTERRUPTED, file=sys.stderr)
            return 130
        lost = spark_lost(exc)
        if lost is not None:
            print(f"error: Spark stopped under the command ({lost}); a check run again resumes from its last "
                  "committed level", file=sys.stderr)
            return EXIT_SPARK_LOST
        traceback.print_exc()  # an engine bug: say so, with the trace
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
