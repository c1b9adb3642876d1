"""Entry point for scheduled jobs (``sse-job``; the Databricks bundle in ``pipelines/`` runs it).

A job passes flat named parameters (``--command=check --model=M --constants="A=1;B=c1,c2"``), which
this turns into the command line's own arguments and hands to ``engine.cli.main``: the job runs the
same code as ``python -m engine``. ``audit`` and ``report`` find the run from the same model,
configuration and constants as ``check`` (the run id is a hash of them), so a job's tasks share
parameters instead of passing the run id from one task to the next.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import engine.cli.main as cli
from engine.errors import EngineError, UsageError

__all__ = ["build_parser", "to_cli_argv", "main"]

COMMANDS = ("check", "audit", "report")


def build_parser() -> argparse.ArgumentParser:
    p = cli._Parser(prog="sse-job", description="Run a model check, audit or report from job parameters.")
    p.add_argument("--command", required=True, choices=COMMANDS)
    p.add_argument("--model", required=True)
    p.add_argument("--config", default="", help="configuration name (empty: the model's default)")
    p.add_argument("--constants", default="", help='overrides, separated by ";" or spaces: "LedgerLimit=3;Clients=c1,c2"')
    p.add_argument("--warehouse", required=True, help="a path every node sees: a Unity Catalog volume "
                   "(/Volumes/catalog/schema/volume/warehouse) or a shared filesystem")
    p.add_argument("--models", default="", help="folder with schemas/ and actions_sql/ (the bundle syncs them)")
    p.add_argument("--master", default="", help="Spark master (empty: the job cluster's session)")
    p.add_argument("--no-deadlock", default="false", choices=("true", "false"))
    return p


def _sets(constants: str) -> list[str]:
    items = [c for c in re.split(r"[;\s]+", constants.strip()) if c]
    bad = [c for c in items if "=" not in c]
    if bad:
        raise UsageError(f"--constants: {bad[0]!r} is not CONST=VALUE")
    return items


def to_cli_argv(args: argparse.Namespace) -> list[str]:
    head = ["--models", args.models] if args.models else []
    if args.command == "check":
        argv = [*head, "check", args.model, "--warehouse", args.warehouse, "--json"]
        argv += ["--config", args.config] if args.config else []
        for s in _sets(args.constants):
            argv += ["--set", s]
        argv += ["--no-deadlock"] if args.no_deadlock == "true" else []
        argv += ["--master", args.master] if args.master else []
        return argv
    from engine.model.loader import default_models_root, load_model, resolve_run
    model = load_model(args.model, Path(args.models) if args.models else default_models_root())
    spec = resolve_run(model, args.config or None, _sets(args.constants), None,
                       False if args.no_deadlock == "true" else None)
    if args.command == "audit":
        return [*head, "audit", spec.run_id, "--warehouse", args.warehouse, "--json",
                *(["--master", args.master] if args.master else [])]
    return [*head, "report", spec.run_id, "--warehouse", args.warehouse]


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        cli_argv = to_cli_argv(args)
    except EngineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    # The exit status is the command line's: a violation (12) or deadlock (11) fails the task. The
    # bundle's audit and report tasks run after it all the same (run_if: ALL_DONE): a run that found
    # an error is audited and reported too.
    return cli.main(cli_argv)


if __name__ == "__main__":
    sys.exit(main())
