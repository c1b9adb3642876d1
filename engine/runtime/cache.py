"""The engine's cache folder on this machine: its compiled JVM helpers and the engine server's socket."""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_folder"]


def cache_folder() -> Path:
    """``$XDG_CACHE_HOME/sse``, else ``~/.cache/sse``."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "sse"
