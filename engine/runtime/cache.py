"""The engine's cache folder on this machine (compiled JVM helpers, Spark's class archive, the Java
launcher, the server's socket)."""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_folder"]


def cache_folder() -> Path:
    """``$XDG_CACHE_HOME/sse``, else ``~/.cache/sse``."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "sse"
