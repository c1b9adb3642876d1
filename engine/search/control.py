"""What stops a search from outside: set by engine.platform.server when a command's client has gone.
The search stops before its next level, as after Ctrl-C, and resumes from its last committed level
when started again. Also the per-stage timer that the ``profile`` setting prints, on either path."""
import sys
import threading
import time

__all__ = ["INTERRUPTED", "StageTimer", "cancelled", "stop_requested"]

cancelled = threading.Event()

# What a command stopped by Ctrl-C says (the command line, or its client when an engine server runs it).
INTERRUPTED = "interrupted; the run resumes from its last committed level when started again"


def stop_requested(exc: BaseException) -> bool:
    """Whether ``exc`` is a stop asked for (Ctrl-C, a server's client gone) rather than a failure to
    work around: ``cancelled`` is set, or a KeyboardInterrupt is in its chain. PySpark's SIGINT
    handler cancels every job, then raises KeyboardInterrupt; where that lands in a block whose
    cleanup asks the JVM for the job's result, the cancelled job's error is raised over it, so a
    caller that falls back or retries on Spark's errors would compute the level again."""
    if cancelled.is_set():
        return True
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


class StageTimer:
    """Per-stage wall time of each level, printed to stderr with settings.profile (both paths)."""

    def __init__(self, on: bool = False) -> None:
        self.on = on
        self.last = time.time()
        self.parts: list[str] = []

    def mark(self, label: str) -> None:
        if self.on:
            now = time.time()
            self.parts.append(f"{label}={now - self.last:.3f}")
            self.last = now

    def note(self, text: str) -> None:
        if self.on:
            self.parts.append(text)

    def flush(self, depth: int) -> None:
        if self.on:
            print(f"  profile depth {depth}: " + " ".join(self.parts), file=sys.stderr, flush=True)
        self.parts = []
        self.last = time.time()
