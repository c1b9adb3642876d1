"""Errors the engine reports to users, each with the exit status the command line returns."""
from __future__ import annotations

import re
import traceback
from pathlib import Path

__all__ = [
    "EXIT_OK", "EXIT_INTERNAL", "EXIT_BAD_INPUT", "EXIT_SPARK_LOST", "EXIT_DEADLOCK", "EXIT_VIOLATION",
    "EXIT_LIVENESS", "EXIT_ILLEGAL_TRACE",
    "EngineError", "ModelError", "UsageError", "WarehouseError", "RunLockedError", "spark_lost",
]

# TLC's own codes for the two kinds of finding, so scripts written for TLC keep working.
EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_BAD_INPUT = 2
# The Spark under a command went away while it ran (its driver's JVM killed, its context stopped):
# neither the input's fault nor the engine's; a check run again resumes from its last commit.
EXIT_SPARK_LOST = 3
EXIT_DEADLOCK = 11
EXIT_VIOLATION = 12
# check: a liveness property is violated (TLC's own code for a temporal property violated).
EXIT_LIVENESS = 13
# engine replay: a step of the trace is not a transition of the model (another command: no clash).
EXIT_ILLEGAL_TRACE = 13


class EngineError(Exception):
    """A problem with what the user gave us; the message says what and where."""

    exit_code = EXIT_BAD_INPUT


class ModelError(EngineError):
    """A model's schema or SQL files are malformed or inconsistent."""


class UsageError(EngineError):
    """Bad arguments: unknown model, constant, configuration, invariant, or a value of the wrong type."""


class WarehouseError(EngineError):
    """The warehouse cannot be used: not writable, or its tables are broken."""


class RunLockedError(WarehouseError):
    """Another live process is running the same run on the same warehouse."""


# What Spark says once its context is stopped under a running command.
_STOPPED = ("SparkContext was shut down", "Cannot call methods on a stopped SparkContext")


# A Spark Connect session the server no longer has (a server restarted while the client retried):
# the server's error classes, and the client's once it has closed the session on seeing a new
# server-side session id; a new session (the command run again) is what PySpark asks for.
_SESSION_GONE = ("INVALID_HANDLE.SESSION_CHANGED", "INVALID_HANDLE.SESSION_NOT_FOUND", "INVALID_HANDLE.SESSION_CLOSED",
                 "NO_ACTIVE_SESSION", "Received incorrect server side session identifier")


def _connect_session_gone(exc: BaseException, text: str) -> str | None:
    if not type(exc).__module__.startswith("pyspark.errors"):
        return None
    mark = next((m for m in _SESSION_GONE if m in text), None)
    if mark is None:
        return None
    line = next(line for line in text.splitlines() if mark in line).strip()
    return f"the Spark Connect server lost this command's session, as a server restarted under it does: {line}"


def _connect_unavailable(exc: BaseException, text: str) -> str | None:
    """A Spark Connect server the client stopped retrying (gRPC's UNAVAILABLE, raised by gRPC or by
    PySpark's Spark Connect client), in gRPC's own words."""
    kind = type(exc)
    if "StatusCode.UNAVAILABLE" not in text or not (kind.__module__.startswith(("grpc", "pyspark.errors"))
                                                    or "Grpc" in kind.__name__ or "Rpc" in kind.__name__):
        return None
    details = re.search(r'details = "(.*)"', text)
    return "the Spark Connect server is unreachable" + (f": {details.group(1)}" if details else "")


def spark_lost(exc: BaseException) -> str | None:
    """Why the Spark under a command went away, if ``exc`` (or an exception it was raised from or
    while handling) says so: the context stopped, the driver's JVM gone (PySpark's Py4J link to it
    refused or cut), a Spark Connect server out of reach past the client's retries, or its session
    gone with a server restarted under the command; else None."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        text = str(exc)
        for mark in _STOPPED:
            if mark in text:
                return next(line for line in text.splitlines() if mark in line).strip().lstrip(": ")
        unreachable = _connect_unavailable(exc, text) or _connect_session_gone(exc, text)
        if unreachable is not None:
            return unreachable
        frames = traceback.extract_tb(exc.__traceback__)
        if (type(exc).__name__ == "Py4JNetworkError" or isinstance(exc, (ConnectionError, EOFError))) and \
                frames and "py4j" in Path(frames[-1].filename).parts:
            first = text.splitlines()[0] if text else ""
            return f"the driver's JVM is gone: {type(exc).__name__}: {first}".rstrip(": ")
        exc = exc.__cause__ or exc.__context__
    return None
