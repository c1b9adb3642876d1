"""Errors the engine reports to users, each with the exit status the command line returns."""
from __future__ import annotations

__all__ = [
    "EXIT_OK", "EXIT_INTERNAL", "EXIT_BAD_INPUT", "EXIT_DEADLOCK", "EXIT_VIOLATION", "EXIT_LIVENESS",
    "EXIT_ILLEGAL_TRACE",
    "EngineError", "ModelError", "UsageError", "WarehouseError", "RunLockedError",
]

# TLC's own codes for the two kinds of finding, so scripts written for TLC keep working.
EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_BAD_INPUT = 2
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
