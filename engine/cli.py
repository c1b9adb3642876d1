"""Command line: ``python -m engine check|models|audit`` (also installed as ``sse``)."""
from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from pathlib import Path

from .errors import EXIT_DEADLOCK, EXIT_INTERNAL, EXIT_OK, EXIT_VIOLATION, EngineError, UsageError
from .model import default_models_root, list_models, load_model, resolve_run

__all__ = ["main", "build_parser"]

RESULT_EXIT = {"ok": EXIT_OK, "invariant_violated": EXIT_VIOLATION, "deadlock": EXIT_DEADLOCK}


def _default_warehouse() -> Path:
    return Path(os.environ.get("SSE_WAREHOUSE") or (default_models_root() / "warehouse"))


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # bad arguments are bad input: exit 2 with the reason
        self.print_usage(sys.stderr)
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m engine", description="Relational state-space engine: TLA+-style models "
                "checked breadth-first on Spark, every state a row in a Delta table.")
    p.add_argument("--models", type=Path, default=None, help="folder with schemas/ and actions_sql/ "
                   "(default: this checkout, or $SSE_MODELS)")
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
    c.add_argument("--warehouse", type=Path, default=None, help="where the Delta tables go (default: warehouse/)")
    c.add_argument("--master", default=None, help="Spark master (default: local[2] or $SSE_SPARK_MASTER)")
    c.add_argument("--json", action="store_true", help="print exactly one JSON object on stdout")
    c.add_argument("--fresh", action="store_true", help="discard this run's earlier tables and start over")
    c.add_argument("--quiet", action="store_true", help="no per-level progress on stderr")

    sub.add_parser("models", help="list the models, their constants and configurations")

    a = sub.add_parser("audit", help="run a finished run's invariant suite again over its whole states table")
    a.add_argument("run", help="run id, or the run's folder")
    a.add_argument("--warehouse", type=Path, default=None)
    a.add_argument("--master", default=None)
    a.add_argument("--json", action="store_true")
    return p


def _cmd_models(args) -> int:
    root = args.models or default_models_root()
    for name in list_models(root):
        m = load_model(name, root)
        print(f"{m.name}: {m.title}")
        src = m.source
        if src:
            print(f"  source: {src.get('module', '')} ({src.get('repository', '')})")
        print("  constants:")
        for c in m.constants.values():
            print(f"    {c.name} : {c.type} = {_fmt_const(c.default)}" + (f"   -- {c.doc}" if c.doc else ""))
        print(f"  invariants: {', '.join(m.invariants) or '-'}")
        print(f"  constraints: {', '.join(m.constraints) or '-'}")
        print("  configurations:")
        for cname, cfg in m.configurations.items():
            mark = " (default)" if cname == m.default_configuration else ""
            consts = ", ".join(f"{k}={_fmt_const(v)}" for k, v in (cfg.get("constants") or {}).items())
            print(f"    {cname}{mark}: {consts}; invariants {cfg.get('invariants', list(m.invariants))}; "
                  f"deadlock {'on' if cfg.get('deadlock', True) else 'off'}")
    return EXIT_OK


def _fmt_const(v) -> str:
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, list):
        return "{" + ",".join(str(x) for x in v) + "}"
    return str(v)


def _cmd_check(args) -> int:
    from .report import Progress, format_summary

    root = args.models or default_models_root()
    model = load_model(args.model, root)
    spec = resolve_run(model, args.config, args.sets, args.invariants or None,
                       False if args.no_deadlock else None,
                       symmetry=False if args.no_symmetry else None)
    warehouse = args.warehouse or _default_warehouse()
    from .checker import check
    from .store import check_warehouse
    check_warehouse(warehouse)  # before Spark starts: a bad path costs nothing
    progress = Progress(quiet=args.quiet)
    try:
        outcome = check(spec, warehouse, master=args.master, progress=progress, fresh=args.fresh)
    finally:
        progress.close()
    if args.json:
        print(json.dumps(outcome.to_json()))
    else:
        print(format_summary(outcome))
    return RESULT_EXIT[outcome.result]


def _cmd_audit(args) -> int:
    from .audit import audit_run
    warehouse = args.warehouse or _default_warehouse()
    report = audit_run(args.run, warehouse, models_root=args.models or default_models_root(), master=args.master)
    if args.json:
        print(json.dumps(report))
    else:
        print(f"audit of run {report['run_id']} ({report['model']}): {'PASS' if report['success'] else 'FAIL'}")
        for check_name, ok, detail in report["checks"]:
            print(f"  [{'ok' if ok else 'FAIL'}] {check_name}: {detail}")
    return EXIT_OK if report["success"] else EXIT_VIOLATION


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        if args.command == "models":
            return _cmd_models(args)
        if args.command == "check":
            return _cmd_check(args)
        if args.command == "audit":
            return _cmd_audit(args)
        raise UsageError(f"unknown command {args.command}")
    except EngineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted; the run resumes from its last committed level when started again", file=sys.stderr)
        return 130
    except Exception:  # an engine bug: say so, with the trace
        traceback.print_exc()
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
