"""The engine as a long-lived server: one Spark driver kept up between commands.

    python -m engine serve [--master local[2]] [--socket PATH]     # in a terminal of its own, or &
    python -m engine check ledger_chaining                          # handed to the server
    python -m engine serve --status | --stop

A command that starts Spark (``check``, ``audit``, ``replay``, ``sql``) pays for the JVM's start, the
engine's jar and Spark's own classes being loaded, and HotSpot compiling Spark's planner, the
actions' generated code and the Arrow writers again, a large share of a short run's time.
``serve`` keeps that driver up; the command line sends its arguments to it over a Unix socket and
prints what the command prints, with the command's own exit status. Each command runs in a Spark
session of its own (its SQL settings, the model's constants as SQL variables, its temporary views),
sharing the driver's JVM, its compiled code and Spark's cache of generated classes. Commands run
one at a time, in the order they arrive.

The command line uses a server when one listens at the socket (``$SSE_SERVER``, default
``<cache>/sse/server.sock``) and runs the same engine code (a digest of ``engine/``), the same
``SSE_*`` settings and the Spark master the command asks for; otherwise it runs the command itself,
and says why when a server was there. ``--no-server`` or ``SSE_SERVER=off`` never uses one. A
command whose client goes away (Ctrl-C) has its Spark jobs cancelled: the run stops at the level it
was computing and resumes from its last committed level when started again.

The protocol is one JSON object a line: the server greets each connection with its identity
(``hello``); the client sends ``{"argv": [...], "cwd": ...}`` (or ``{"stop": true}``); the server
sends ``{"out": text}`` and ``{"err": text}`` as the command prints, then ``{"exit": status}``.
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Callable, TextIO

import engine.cli.client as client
from engine.cli.client import ENV, GONE, PROTOCOL, _connect, code_digest, engine_path, settings_key
from engine.settings import Settings
from engine.errors import EXIT_INTERNAL, EXIT_OK, EngineError, UsageError
from engine.model.loader import parse_case

__all__ = ["serve", "detach"]


class _Gone(BrokenPipeError):
    """The command's client closed its connection."""


class _Frames:
    """A text stream that sends what is written to the client as ``{kind: text}`` lines."""

    def __init__(self, conn: socket.socket, kind: str, lock: threading.Lock, gone: threading.Event):
        self.conn, self.kind, self.lock, self.gone = conn, kind, lock, gone

    def write(self, text: str) -> int:
        if text:
            if self.gone.is_set():
                raise _Gone("the client closed its connection")
            send(self.conn, {self.kind: text}, self.lock)
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    @property
    def encoding(self) -> str:
        return "utf-8"


def send(conn: socket.socket, msg: dict, lock: threading.Lock) -> None:
    with lock:
        conn.sendall(json.dumps(msg).encode() + b"\n")


class _Server:
    def __init__(self, path: Path, spark, log: TextIO, run_command: Callable[[list[str]], int], base: Settings):
        self.path, self.spark, self.log = path, spark, log
        self.base = base  # the settings of the server's environment, which the commands it runs start from
        self.run_command = run_command  # the command line's main (engine.cli.main), given by its caller
        self.started = self.active = time.time()  # active: when the last command started or ended
        self.served = 0
        self.current: threading.Event | None = None  # the running command's ``gone``
        self.running: str | None = None  # its arguments
        self.threads: set[threading.Thread] = set()  # the connections' threads, joined before exiting
        self.busy = threading.Lock()
        self.stopping = threading.Event()
        self.code = code_digest()

    def hello(self) -> dict:
        return {"protocol": PROTOCOL, "pid": os.getpid(), "code": self.code, "engine": engine_path(),
                "master": self.spark.sparkContext.master, "settings": settings_key(self.base), "started": self.started,
                "served": self.served, "running": self.running}

    def handle(self, conn: socket.socket) -> None:
        try:
            self._handle(conn)
        finally:
            self.threads.discard(threading.current_thread())

    def _handle(self, conn: socket.socket) -> None:
        lock = threading.Lock()
        with conn:
            try:
                send(conn, self.hello(), lock)
                stream = conn.makefile("rb")
                line = stream.readline()
                if not line:
                    return
                req = json.loads(line)
                if req.get("status"):
                    send(conn, {"exit": EXIT_OK}, lock)
                elif req.get("stop"):
                    with self.busy:  # after the command running now, if any
                        self.stopping.set()
                    send(conn, {"exit": EXIT_OK}, lock)
                else:
                    gone, done = self.watch(conn)
                    if self.busy.locked():
                        send(conn, {"err": "engine server: waiting for the command before this one\n"}, lock)
                    with self.busy:
                        if self.stopping.is_set():
                            send(conn, {"refused": "the server is stopping"}, lock)
                            return
                        if gone.is_set():
                            print("engine server: a client left before its command started", file=self.log, flush=True)
                            return
                        try:
                            code = self.run(conn, req, lock, gone)
                        finally:
                            done.set()
                    if code != GONE:
                        send(conn, {"exit": code}, lock)
            except (OSError, ValueError) as exc:
                print(f"engine server: a connection ended: {exc}", file=self.log, flush=True)

    def watch(self, conn: socket.socket) -> tuple[threading.Event, threading.Event]:
        """Watch the client's end of ``conn``: (gone, done). When it closes (the client exited or was
        interrupted) before ``done`` is set, ``gone`` is set and the command's search stops: its
        Spark jobs are cancelled and the search stops at the next level (checker.cancelled)."""
        import engine.search.control as checker
        gone, done = threading.Event(), threading.Event()

        def watch() -> None:
            try:
                while conn.recv(4096):
                    pass
            except OSError:
                pass
            if not done.is_set():
                gone.set()
                if self.busy.locked() and self.current is gone:
                    checker.cancelled.set()
                    self.spark.sparkContext.cancelAllJobs()

        threading.Thread(target=watch, daemon=True, name="sse-client-watch").start()
        return gone, done

    def run(self, conn: socket.socket, req: dict, lock: threading.Lock, gone: threading.Event) -> int:
        """Run one command line sent by a client, its output sent back; GONE when the client left."""
        import engine.search.control as checker
        argv = [str(a) for a in req["argv"]]
        t0 = time.time()
        checker.cancelled.clear()
        self.current, self.running = gone, " ".join(argv)
        if gone.is_set():  # (the client left as the command started)
            checker.cancelled.set()
        try:
            code = self.command(argv, req.get("cwd"), _Frames(conn, "out", lock, gone), _Frames(conn, "err", lock, gone))
        finally:
            self.current, self.running = None, None
            checker.cancelled.clear()
        if gone.is_set():
            code = GONE
        print(f"engine server: {' '.join(argv)} -> "
              + ("client gone, jobs cancelled" if code == GONE else f"exit {code}")
              + f" after {time.time() - t0:.1f} s", file=self.log, flush=True)
        return code

    def command(self, argv: list[str], cwd: str | None, out: TextIO, err: TextIO) -> int:
        """The command line ``argv`` in ``cwd``, in a Spark session of its own, printing to ``out`` and ``err``."""
        import engine.runtime.jvm_ext as jvm_ext
        from engine.accel.spark import persistent_rdd_ids, unpersist_rdds
        here, code, session = os.getcwd(), EXIT_INTERNAL, None
        self.active = time.time()
        try:
            session = self.spark.newSession()
            _make_default(session)
            os.chdir(cwd or here)
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    code = self.run_command(argv)
                except SystemExit as exc:  # --help
                    code = exc.code if isinstance(exc.code, int) else EXIT_OK
        except _Gone:
            code = GONE
        except BaseException as exc:  # noqa: BLE001 - the server outlives a failed command
            print(f"engine server: {' '.join(argv)} failed: {exc!r}", file=self.log, flush=True)
            with contextlib.suppress(Exception):
                err.write(f"error: the engine server could not run the command: {exc!r}\n")
        finally:
            os.chdir(here)
            with contextlib.suppress(Exception):  # (a JVM that is gone: the next command says so)
                # What the command left cached (a run's last checkpoints): the next one starts clean.
                unpersist_rdds(self.spark, persistent_rdd_ids(self.spark))
                if session is not None:
                    jvm_ext.forget(session)
                _make_default(self.spark)
            self.served += 1
            self.active = time.time()
        return code

    def warm(self, cases: list[str], models: Path | None) -> None:
        """Check each case once into a folder thrown away, so that the first commands find the JVM's code
        compiled."""
        import tempfile
        with self.busy, tempfile.TemporaryDirectory(prefix="sse-warm-") as tmp:
            for case in cases:
                argv = [*(["--models", str(models)] if models else []), *warm_argv(case),
                        "--warehouse", tmp, "--fresh", "--quiet", "--json"]
                t0, self.running = time.time(), f"warm-up with {case}"
                code = self.command(argv, None, _Discard(), self.log)
                self.running = None
                self.served -= 1  # not a client's
                print(f"engine server: warmed up with {case} -> exit {code} after {time.time() - t0:.1f} s",
                      file=self.log, flush=True)


def warm_argv(case: str) -> list[str]:
    """``check``'s arguments for ``MODEL[:CONFIG][+CONST=VALUE...]`` (benchmarks/benchmark.py's cases)."""
    model, config, sets = parse_case(case)
    return ["check", model, *(["--config", config] if config else []), *[a for s in sets for a in ("--set", s)]]


def _check_warm(cases: list[str], models: Path | None) -> None:
    """Each warm-up case names a model, configuration and constants that exist (before Spark starts)."""
    from engine.model.loader import default_models_root, load_model, resolve_run
    for case in cases:
        model, config, sets = parse_case(case)
        try:
            resolve_run(load_model(model, models or default_models_root()), config, sets, None, None)
        except EngineError as exc:
            raise type(exc)(f"--warm {case}: {exc}") from None


class _Discard:
    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass


def _make_default(session) -> None:
    """``session`` the one ``SparkSession.builder.getOrCreate()`` (engine.runtime.session.get_spark) returns."""
    from pyspark.sql import SparkSession
    SparkSession._instantiatedSession = session
    SparkSession._activeSession = session
    jcls = SparkSession._get_j_spark_session_class(session._jvm)
    jcls.setDefaultSession(session._jsparkSession)
    jcls.setActiveSession(session._jsparkSession)


def serve(path: Path, settings: Settings, run_command: Callable[[list[str]], int], log: TextIO | None = None,
          warm: list[str] | None = None, idle_stop: float | None = None, base: Settings | None = None) -> int:
    """Start Spark, then run the commands sent to ``path`` until stopped, or until no command came for
    ``idle_stop`` seconds; first check each of ``warm`` (``MODEL[:CONFIG][+CONST=VALUE...]``) once,
    commands sent meanwhile waiting for it. ``run_command`` runs one command line (engine.cli.main's
    ``main``): the server runs what the command line would, without importing it."""
    log = log or sys.stderr
    if len(str(path).encode()) > 100:
        raise UsageError(f"the socket path {path} is too long for a Unix socket (at most 100 bytes): "
                         f"set {ENV} or --socket to a shorter one")
    models = settings.models
    _check_warm(warm or [], models)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        if _connect(path) is not None:
            raise UsageError(f"an engine server already listens at {path} (stop it: python -m engine serve --stop)")
        path.unlink()  # left by a server that is gone
    from engine.runtime.session import get_spark
    t0 = time.time()
    spark = get_spark(settings)
    client.in_server = True
    server = _Server(path, spark, log, run_command, base or settings)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    mask = os.umask(0o177)  # the socket is the user's own from the start (mode 0600)
    try:
        listener.bind(str(path))
    finally:
        os.umask(mask)
    listener.listen(16)
    listener.settimeout(0.5)
    def interrupted(*_) -> None:
        # (PySpark's own handler cancels every job: the running command would fail.) A second Ctrl-C
        # stops at once; the command's run resumes from its last committed level.
        if server.stopping.is_set():
            raise KeyboardInterrupt
        server.stopping.set()
        if server.busy.locked():
            print("engine server: stopping after the command it runs (Ctrl-C again to stop at once; the run "
                  "resumes from its last committed level)", file=log, flush=True)

    previous = signal.signal(signal.SIGTERM, lambda *_: server.stopping.set())
    previous_int = signal.signal(signal.SIGINT, interrupted)
    print(f"engine server: listening at {path} (pid {os.getpid()}, Spark {spark.sparkContext.master}, "
          f"started in {time.time() - t0:.1f} s; stop it with python -m engine serve --stop)", file=log, flush=True)
    if warm:
        threading.Thread(target=server.warm, args=(warm, models), daemon=True, name="sse-warm").start()
    try:
        while not server.stopping.is_set():
            try:
                conn, _ = listener.accept()
            except socket.timeout:
                if idle_stop and not server.busy.locked() and time.time() - server.active > idle_stop:
                    print(f"engine server: no command for {idle_stop:g} s, stopping", file=log, flush=True)
                    break
                continue
            conn.settimeout(None)
            thread = threading.Thread(target=server.handle, args=(conn,), daemon=True, name="sse-client")
            server.threads.add(thread)
            thread.start()
    finally:
        listener.close()
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)
        with server.busy:  # a command still running ends first
            client.in_server = False
        for thread in list(server.threads):  # and its client gets its exit status
            thread.join(timeout=10)
        print(f"engine server: stopped after {server.served} commands", file=log, flush=True)
    return EXIT_OK


def detach(argv: list[str], path: Path, settings: Settings, timeout: float = 300.0, out: TextIO | None = None) -> int:
    """Start ``python -m engine ARGV`` (a ``serve`` without ``--detach``) in a session of its own, its
    output in ``<socket>.log``; return once it listens at ``path``, or with its status and the end of
    its log if it exits first."""
    import subprocess
    out = out or sys.stdout
    path.parent.mkdir(parents=True, exist_ok=True)
    log_path = path.with_name(path.name + ".log")
    with open(log_path, "ab") as log:
        proc = subprocess.Popen([sys.executable, "-m", "engine", *argv], stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                env={**os.environ, ENV: str(path)})
    end = time.time() + timeout
    while time.time() < end:
        code = proc.poll()
        if code is not None:
            tail = log_path.read_text(errors="replace").splitlines()[-5:]
            print(f"engine server exited with status {code} before it listened; the end of {log_path}:", file=sys.stderr)
            for line in tail:
                print(f"  {line}", file=sys.stderr)
            return code or EXIT_INTERNAL
        conn = _connect(path)
        if conn is not None:
            conn[0].close()
            if conn[2].get("pid") == proc.pid:
                print(f"engine server: pid {proc.pid} listening at {path} (its output: {log_path}; "
                      "stop it with python -m engine serve --stop)", file=out)
                return EXIT_OK
        time.sleep(0.2)
    proc.terminate()
    print(f"error: the engine server did not listen at {path} within {timeout:g} s; see {log_path}", file=sys.stderr)
    return EXIT_INTERNAL
