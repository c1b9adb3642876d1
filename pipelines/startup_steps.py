"""What a cold command's first steps cost, in a fresh process: the session, the constants, the model's SQL.

    python pipelines/startup_steps.py MODEL [--config CONFIG] [--models DIR]

Times, one after the other in this process (a JVM of its own, as a command line starts one):
``get_spark``, ``declare_constants`` (the session's first SQL), ``compile_model`` (every file of
the model parsed and analyzed) and ``spark.sql`` of the actions' union (parsed and analyzed again
as one query, as the search's second level does), then prints the parse cache's figures for the
process (``engine.runtime.session.parse_cache_counts``: texts read back, parsed, written). Run it with
``SSE_PARSE_CACHE=off`` and without, alternated, to see what the parse cache saves; the first run
after the engine's jar changes writes the cache's files (and Java's AOT cache) and is not a measure.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import engine.search.expand as expand  # noqa: E402
from engine.errors import EngineError  # noqa: E402
from engine.model.loader import load_model, resolve_run  # noqa: E402
from engine.runtime.session import declare_constants, get_spark, parse_cache_counts  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model")
    p.add_argument("--config", default=None)
    p.add_argument("--models", type=Path, default=None)
    args = p.parse_args(argv)
    try:
        model = load_model(args.model, args.models)
        spec = resolve_run(model, args.config)
    except EngineError as exc:  # an unknown model or configuration: before Spark starts
        print(f"startup_steps: {exc}", file=sys.stderr)
        return 2
    steps = []

    def timed(name, fn):
        t = time.time()
        out = fn()
        steps.append((name, time.time() - t))
        return out

    spark = timed("get_spark", get_spark)
    timed("declare_constants", lambda: declare_constants(spark, model, spec.constants))
    cm = timed("compile_model", lambda: expand.compile_model(spark, model))
    timed("the union's spark.sql", lambda: spark.sql(cm.successors_sql))
    for name, seconds in steps:
        print(f"{name:24s} {seconds:6.3f} s")
    counts = parse_cache_counts(spark)
    print("parse cache              " + (", ".join(f"{k} {v}" for k, v in counts.items()) if counts else "off"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
