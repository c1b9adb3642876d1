"""The command line's side of the engine server (engine.platform.server): finding a server that runs
the same engine with the same settings, and handing it a command.

The protocol is one JSON object a line: the server greets each connection with its identity
(``hello``); the client sends ``{"argv": [...], "cwd": ...}`` (or ``{"stop": true}``); the server
sends ``{"out": text}`` and ``{"err": text}`` as the command prints, then ``{"exit": status}``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any, TextIO

from engine.errors import EXIT_INTERNAL, EXIT_OK, EngineError, UsageError
from engine.search.control import INTERRUPTED
from engine.settings import Settings

__all__ = ["ENV", "FORWARDED", "PROTOCOL", "code_digest", "forward", "greeting", "socket_path", "status", "stop"]

ENV = "SSE_SERVER"
PROTOCOL = 1
# The commands that start Spark: the ones a server runs for the command line.
FORWARDED = ("check", "audit", "replay", "sql")
OFF = ("0", "off", "no", "false", "none")
# How long a client waits for a server's greeting (sent at once, whatever the server is running).
HELLO_SECONDS = 10.0
GONE = 130  # a command whose client went away (the client's own status after Ctrl-C)
in_server = False  # True in the server's process: the commands it runs do not forward again


def socket_path(settings: Settings) -> Path | None:
    """The server's socket: the setting ``server`` (SSE_SERVER), else ``<cache>/sse/server.sock``; None
    when switched off."""
    setting = settings.server.strip()
    if setting.lower() in OFF:
        return None
    if setting:
        return Path(setting).expanduser().absolute()
    from engine.runtime.cache import cache_folder
    return cache_folder() / "server.sock"


def code_digest() -> str:
    """A digest of the engine's own files (its Python and Java sources): a server running other engine
    code than the command line's (an edited checkout, another install) is not used."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for f in sorted([*root.rglob("*.py"), *root.rglob("*.java")]):
        h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def engine_path() -> str:
    """Where this engine is installed (a checkout's ``engine/``): its models and warehouse default to
    that checkout's, so a server from another checkout with the same code is not used either."""
    return str(Path(__file__).resolve().parents[1])


def settings_key(settings: Settings) -> dict[str, str]:
    """The settings a server and a client must share, as their ``SSE_*`` variables (those changed from
    the defaults): the master and the socket aside, which are compared on their own."""
    return {k: v for k, v in sorted(settings.to_env().items())
            if k not in (Settings.env_name("server"), Settings.env_name("master"))}



def _connect(path: Path) -> tuple[socket.socket, Any, dict] | None:
    """A connection to the server at ``path`` and its greeting, or None when nothing answers there."""
    if not path.exists():
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(HELLO_SECONDS)
        sock.connect(str(path))
        stream = sock.makefile("rwb")
        hello = json.loads(stream.readline() or b"null")
        sock.settimeout(None)
    except (OSError, ValueError):
        sock.close()
        return None  # a socket file left by a server that is gone, or not an engine server
    if not isinstance(hello, dict) or hello.get("protocol") != PROTOCOL:
        sock.close()
        return None
    return sock, stream, hello


def greeting(path: Path) -> dict | None:
    """What the server at ``path`` says of itself as a client connects (its pid, Spark master,
    engine code, commands served so far, ...), or None when no engine server answers there."""
    conn = _connect(path)
    if conn is None:
        return None
    conn[0].close()
    return conn[2]


def _mismatch(hello: dict, base: Settings, master: str) -> str | None:
    if hello.get("code") != code_digest():
        return "it runs other engine code (restart it: python -m engine serve --stop, then serve)"
    if hello.get("engine") != engine_path():
        return f"it runs the engine at {hello.get('engine')} (its models and warehouse), this command's is at {engine_path()}"
    if hello.get("master") != master:
        return f"it runs Spark master {hello.get('master')}, this command asks for {master}"
    if hello.get("settings") != settings_key(base):
        theirs, ours = hello.get("settings") or {}, settings_key(base)
        names = sorted(k for k in set(theirs) | set(ours) if theirs.get(k) != ours.get(k))
        return f"its SSE_* settings differ from this shell's ({', '.join(names)})"
    return None


def forward(argv: list[str], base: Settings, master: str, out: TextIO | None = None,
            err: TextIO | None = None) -> int | None:
    """Run the command line ``argv`` on the server, if one can: its exit status, or None (run it here).
    ``base`` is the settings from this process's environment (the server reads ``argv``'s options
    itself), ``master`` the Spark master the command asks for."""
    if in_server:
        return None
    path = socket_path(base)
    conn = _connect(path) if path is not None else None
    if conn is None:
        return None
    sock, stream, hello = conn
    out, err = out or sys.stdout, err or sys.stderr
    with sock:
        why = _mismatch(hello, base, master)
        if why:
            print(f"engine: not using the server at {path} (pid {hello.get('pid')}): {why}", file=err)
            return None
        try:
            stream.write(json.dumps({"argv": argv, "cwd": os.getcwd()}).encode() + b"\n")
            stream.flush()
            for line in stream:
                msg = json.loads(line)
                if "out" in msg:
                    out.write(msg["out"])
                    out.flush()
                elif "err" in msg:
                    err.write(msg["err"])
                    err.flush()
                elif "exit" in msg:
                    return int(msg["exit"])
                elif "refused" in msg:
                    print(f"engine: not using the server at {path} (pid {hello.get('pid')}): {msg['refused']}",
                          file=err)
                    return None
        except KeyboardInterrupt:
            # Closing the connection makes the server cancel the command's Spark jobs.
            print(INTERRUPTED, file=err)
            return 130
        except BrokenPipeError:  # this command's own output closed (| head): the server sees it go
            return EXIT_INTERNAL
        except OSError as exc:
            print(f"error: lost the engine server at {path}: {exc}", file=err)
            return EXIT_INTERNAL
    print(f"error: the engine server at {path} (pid {hello.get('pid')}) stopped before the command ended "
          "(see the server's own output)", file=err)
    return EXIT_INTERNAL


def _request(body: dict, settings: Settings) -> tuple[dict, int | None]:
    path = socket_path(settings)
    conn = _connect(path) if path is not None else None
    if conn is None:
        raise UsageError(f"no engine server listens at {path}" if path else f"{ENV} is off: no server to ask")
    sock, stream, hello = conn
    with sock:
        stream.write(json.dumps(body).encode() + b"\n")
        stream.flush()
        code = None
        for line in stream:
            msg = json.loads(line)
            if "exit" in msg:
                code = int(msg["exit"])
                break
    return hello, code


def status(settings: Settings, out: TextIO | None = None) -> int:
    """Print the running server's identity."""
    hello, _ = _request({"status": True}, settings)
    up = time.time() - hello["started"]
    print(f"engine server at {socket_path(settings)}: pid {hello['pid']}, Spark {hello['master']}, up {up:.0f} s, "
          f"{hello['served']} commands served, engine code {hello['code']}"
          + ("" if hello["code"] == code_digest() else f" (this checkout's is {code_digest()}: not used)")
          + (f"; running: {hello['running']}" if hello.get("running") else "; idle"),
          file=out or sys.stdout)
    return EXIT_OK


def stop(settings: Settings, out: TextIO | None = None) -> int:
    """Ask the running server to exit (after the command it is running, if any)."""
    hello, code = _request({"stop": True}, settings)
    print(f"engine server pid {hello['pid']} stopping", file=out or sys.stdout)
    return EXIT_OK if code == EXIT_OK else EXIT_INTERNAL


