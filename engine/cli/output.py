"""What a person reads: per-level progress on stderr and counterexamples the way TLC prints them."""
from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from engine.model.values import format_value
from engine.search.liveness import fairness_text
from engine.store.runs import LevelFigures

__all__ = ["Progress", "format_trace", "format_summary"]


class Progress:
    """One line per level on stderr, in the spirit of TLC; a live bar when stderr is a terminal."""

    def __init__(self, stream: TextIO | None = None, quiet: bool = False):
        self.stream = stream = stream or sys.stderr
        self.quiet = quiet
        self.start = time.time()
        self.bar = None
        if not quiet and stream.isatty():
            from tqdm import tqdm
            self.bar = tqdm(file=stream, unit=" level", desc="search", dynamic_ncols=True, leave=False)

    def announce(self, text: str) -> None:
        """A line before the levels' (which path the search takes)."""
        if self.quiet:
            return
        if self.bar is not None:
            self.bar.write(text)
        else:
            print(text, file=self.stream, flush=True)

    def __call__(self, fig: LevelFigures, frontier: int) -> None:
        if self.quiet:
            return
        line = (f"Progress({fig.depth}) at {time.time() - self.start:7.1f}s: "
                f"{fig.generated_total:,} states generated, {fig.distinct_total:,} distinct states found, "
                f"{frontier:,} states left on queue (level: {fig.generated:,} generated, "
                f"{fig.new_states:,} new, {fig.seconds:.2f}s)")
        if self.bar is not None:
            self.bar.write(line)
            self.bar.set_postfix(distinct=f"{fig.distinct_total:,}", queue=f"{frontier:,}")
            self.bar.update(1)
        else:
            print(line, file=self.stream, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def format_trace(trace: list[dict[str, Any]], shapes: dict | None = None, constants: dict | None = None,
                 loop: int | None = None, loop_action: str | None = None) -> str:
    """A trace as TLC prints one, each value as the spec writes it (``shapes``: the variables' hints).
    A lasso (``loop``, the index of the state the last one steps back to) ends as TLC's liveness
    counterexamples do: ``State n: Stuttering`` when the last state stutters for ever, else
    ``Back to state k: <Action>``."""
    shapes = shapes or {}
    out = []
    prev: dict[str, Any] | None = None
    for i, step in enumerate(trace, 1):
        label = "<Initial predicate>" if step["action"] == "Init" else f"<{step['action']}>"
        out.append(f"State {i}: {label}")
        for name, value in step["state"].items():
            changed = prev is not None and prev.get(name) != value
            mark = "*" if changed else " "
            out.append(f"{mark}/\\ {name} = {format_value(value, shapes.get(name), constants)}")
        out.append("")
        prev = step["state"]
    if loop is not None:
        if loop_action is None:
            out.append(f"State {len(trace) + 1}: Stuttering")
        else:
            out.append(f"Back to state {loop + 1}: <{loop_action}>")
        out.append("")
    out.append("(* marks the variables the step changed)")
    return "\n".join(out)


def format_summary(o: Any, shapes: dict | None = None) -> str:
    """The outcome as TLC words it. A result read back from the warehouse (an earlier run of the same
    model, configuration and engine version) says so on the first line."""
    lines = []
    if o.from_cache:
        lines.append(f"Stored result: run {o.run_id} finished earlier; read back from its outcome table, "
                     "not searched again (--fresh searches again).")
    if o.result == "invariant_violated":
        lines.append(f"Error: Invariant {o.violated_invariant} is violated.")
        lines.append("Error: The behavior up to this point is:")
        lines.append(format_trace(o.trace, shapes, o.constants))
    elif o.result == "deadlock":
        lines.append("Error: Deadlock reached.")
        lines.append("Error: The behavior up to this point is:")
        lines.append(format_trace(o.trace, shapes, o.constants))
    elif o.result == "property_violated":
        bad = o.properties[o.violated_property]
        if bad.form == "AG EF":
            lines.append(f"Error: Property {bad.name} (AG EF) is violated: {bad.bad_states:,} reachable states "
                         "can no longer reach a state where it holds.")
            lines.append(f"Error: A shortest path to one of them ({len(o.trace) - 1} steps):")
            lines.append(format_trace(o.trace, shapes, o.constants))
        else:
            lines.append("Error: Temporal properties were violated.")
            lines.append(f"Error: Property {bad.name} ({bad.form}) does not hold under {fairness_text(bad.fairness)}.")
            lines.append("Error: The following behavior constitutes a counter-example:")
            lines.append(format_trace(o.trace, shapes, o.constants, o.loop, o.loop_action))
    else:
        lines.append("Model checking completed. No error has been found.")
    for name, r in getattr(o, "properties", {}).items():
        verdict = "holds" if r.holds else ("is violated" + (f" ({r.bad_states:,} doomed states)"
                                                           if r.form == "AG EF" else ""))
        how = "" if r.form == "AG EF" else f" under {fairness_text(r.fairness)}"
        lines.append(f"Property {name} ({r.form}){how} {verdict}"
                     + (" (stored result)" if r.from_cache else f" ({r.seconds:.1f}s)"))
    for name, f in getattr(o, "terminal_findings", {}).items():
        lines.append(f"Finding: {name} holds in {f['count']:,} states without successor "
                     f"(not an error; the first one, reached in {len(f['trace']) - 1} steps):")
        lines.append(format_trace(f["trace"], shapes, o.constants))
    lines.append(f"{o.states_generated:,} states generated, {o.distinct_states:,} distinct states found. "
                 f"The depth of the complete state graph search is {o.depth}.")
    lines.append(f"Run {o.run_id} in {o.seconds:.1f}s" + (" (stored result)" if o.from_cache else "")
                 + (f", resumed from depth {o.resumed_from_depth}" if o.resumed_from_depth else ""))
    if getattr(o, "properties", None):
        rows, size = o.edges or (0, 0)
        lines.append(f"Search {o.search_seconds or 0.0:.1f}s" + (" (stored)" if o.from_cache else "")
                     + f", liveness check {o.liveness_seconds or 0.0:.1f}s; edges table {rows:,} rows, "
                       f"{size / 1e6:.1f} MB")
    lines.append(f"Fingerprints: {o.fingerprint}")
    for name, path in o.tables.items():
        lines.append(f"  {name:8s} {path}")
    return "\n".join(lines)
