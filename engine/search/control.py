"""What stops a search from outside: set by engine.platform.server when a command's client has gone.
The search stops before its next level, as after Ctrl-C, and resumes from its last committed level
when started again."""
import threading

__all__ = ["cancelled"]

cancelled = threading.Event()
