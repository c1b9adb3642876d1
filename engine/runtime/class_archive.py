"""Spark's classes mapped from an archive at start-up: the JVM's application class-data sharing (AppCDS).

A Spark driver loads some 15,000 classes before its first job; the JVM parses and verifies each one
from the jars. Java 13 and later can write every class a run loaded to an archive as it exits
(``-XX:ArchiveClassesAtExit``) and map that archive at the next start (``-XX:SharedArchiveFile``).
On the 2-core machine this brings ledger chaining's first level from 7.9 s to 5.5 s after start.

On Java 25 and later (the engine's default runtime, ``engine.runtime.java``) the archive is the JVM's
AOT cache instead (JEPs 483, 514: ``-XX:AOTCacheOutput`` as the first run exits, ``-XX:AOTCache``
after): the classes loaded and also linked. The JVM writes it in a second JVM as it exits (about
20 s, once). It holds the profiles of the methods the writing run executed too (JEP 515), which the
engine does not use (NO_PROFILES).

The first run on a machine writes the archive when its JVM exits (about 9 s, once, announced on
stderr); later runs map it. The archive is only valid for the JVM and the jars it was made with, so
its name carries a digest of both: a new Java or PySpark makes a new one. One process at a time
writes it (a lock file); others run without it. It lives in ``$XDG_CACHE_HOME/sse`` (``~/.cache/sse``),
or the folder ``SSE_CLASS_ARCHIVE`` names; ``SSE_CLASS_ARCHIVE=off`` leaves the JVM's defaults.
"""
from __future__ import annotations

import atexit
import hashlib
import os
import sys
import time
from pathlib import Path

import engine.runtime.java as java_runtime
from engine.runtime.cache import cache_folder

__all__ = ["ClassArchive", "finish", "status"]

ENV = "SSE_CLASS_ARCHIVE"
# A partial archive this old was left by a killed run (writing one takes seconds).
STALE_SECONDS = 900
# How long a process waits at exit for its JVM to write the archive.
WRITE_TIMEOUT = 300
# The JVM's class-data-sharing warnings go to stdout by default (900 lines when it writes an archive
# of Spark: "Skipping ... Signed JAR"), where they would break --json: JVM warnings go to stderr,
# those of class-data sharing nowhere.
QUIET = "-Xlog:disable -Xlog:all=warning:stderr -Xlog:cds*=off:stderr"
# Java 25's AOT cache logs under its own tag too ("Skipping ...: Signed JAR"), a tag Java 17 rejects.
QUIET_AOT = f"{QUIET} -Xlog:aot*=off:stderr"
# The first Java whose JVM writes an AOT cache as it exits (-XX:AOTCacheOutput, JEP 514).
AOT_FROM = 25
# The cache's method profiles are those of the run that wrote it, and they decide what the next
# runs' JIT compiles early: ledger chaining cold took 23.1 to 25.7 s with the profiles of a ledger
# chaining run, 28.9 and 30.4 s (C2 16 to 18 CPU-s instead of 9 to 10) with those of the long
# tests' process, 25.9 and 27.0 s with none. Which run writes the cache is chance (the first on the
# machine), so its profiles are not used: the classes, loaded and linked, are.
NO_PROFILES = "-XX:+UnlockDiagnosticVMOptions -XX:-AOTReplayTraining"


def _digest(home: Path | None, class_path: str = "") -> str | None:
    """What the archive depends on: the JVM (its ``release`` file and ``libjvm``), Spark's jars
    (names, sizes, times) and what else is on the class path (the engine's own jar)."""
    import pyspark

    if home is None:
        return None
    h = hashlib.sha256(f"{pyspark.__version__}\n{home.resolve()}\n{class_path}\n".encode())
    for f in [home / "release", *sorted(home.glob("lib/server/libjvm.*"))]:
        if f.is_file():
            st = f.stat()
            h.update(f"{f.name} {st.st_size} {st.st_mtime_ns}\n".encode())
    jars = Path(pyspark.__file__).parent / "jars"
    for f in sorted(jars.glob("*.jar")):
        st = f.stat()
        h.update(f"{f.name} {st.st_size} {st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class ClassArchive:
    """The archive of one JVM and set of jars, in ``folder``."""

    def __init__(self, folder: Path, digest: str, aot: bool = False):
        self.folder, self.digest, self.aot = folder, digest, aot
        self.suffix = ".aot" if aot else ".jsa"
        self.path = self._whole()  # None until one is written
        self.lock = folder / f".spark-{digest}.lock"
        self.partial = folder / f".spark-{digest}.{os.getpid()}.partial"
        self.writing = False

    @classmethod
    def configured(cls, class_path: str = "", home: Path | None = None) -> "ClassArchive | None":
        """The archive for the JVM Spark will start from the Java ``home`` (None: the engine's choice,
        ``engine.runtime.java``), with ``class_path`` before Spark's jars; or None when
        ``SSE_CLASS_ARCHIVE=off`` or the cache folder cannot be made."""
        setting = os.environ.get(ENV, "").strip()
        if setting.lower() in {"off", "0", "false", "no"}:
            return None
        try:
            folder = Path(setting).expanduser() if setting else cache_folder()
            home = home or java_runtime.chosen() or java_runtime.home_of_path()
            digest = _digest(home, class_path)
            if digest is None:
                return None
            folder.mkdir(parents=True, exist_ok=True)
            return cls(folder, digest, aot=(java_runtime.major_version(home) or 0) >= AOT_FROM)
        except (OSError, RuntimeError, KeyError):  # no home folder, a read-only one: the JVM's defaults
            return None

    def _whole(self) -> Path | None:
        """The archive, if its size is the one it was written with (its name's last part): the JVM maps
        the file without checking, and a truncated archive crashes it (SIGBUS). Others are removed."""
        for f in sorted(self.folder.glob(f"spark-{self.digest}-*{self.suffix}")):
            try:
                if f.stat().st_size == int(f.stem.rsplit("-", 1)[1]):
                    return f
                f.unlink()
            except (OSError, ValueError):
                pass
        return None

    def jvm_options(self) -> str:
        """Map the archive when there is one; else write it at exit, when no other process is."""
        global _status
        if self.path is not None:
            _status = "mapped"
            if self.aot:
                return f'{QUIET_AOT} {NO_PROFILES} "-XX:AOTCache={self.path}"'
            return f'{QUIET} "-XX:SharedArchiveFile={self.path}"'
        self._remove_stale()
        try:
            fd = os.open(self.lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except OSError:
            _status = "none (another process is writing it)"
            return ""  # another process is writing it (or the folder is read-only)
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        self.writing = True
        _status = "written at exit"
        if self.aot:
            return f'{QUIET_AOT} "-XX:AOTCacheOutput={self.partial}"'
        return f'{QUIET} "-XX:ArchiveClassesAtExit={self.partial}"'

    def started(self) -> None:
        """Called once the JVM runs: when it is writing the archive, finish it at this process's exit
        (``finish``, which ``python -m engine`` calls itself: it leaves with ``os._exit``)."""
        global _pending
        if self.writing:
            _pending = self
            atexit.register(finish)

    def _remove_stale(self) -> None:
        """The lock of a process that is gone, and partial archives left by killed runs."""
        try:
            holder = int(self.lock.read_text())  # empty while its writer is between creating and writing it
        except (OSError, ValueError):
            holder = None
        if holder is not None and not _alive(holder):
            self.lock.unlink(missing_ok=True)
        now = time.time()
        for f in self.folder.glob(f".spark-{self.digest}.*.partial*"):  # (and an AOT cache's .config)
            try:
                if now - f.stat().st_mtime > STALE_SECONDS:
                    f.unlink()
            except OSError:
                pass

    def finish(self) -> None:
        """Stop Spark, let the JVM exit (it writes the archive as it does), and put the archive in
        place only if the JVM exited normally: a half-written file is never mapped."""
        from pyspark import SparkContext

        proc = getattr(SparkContext._gateway, "proc", None)
        try:
            if proc is None or proc.stdin is None:
                return
            print(f"engine: saving Spark's classes for a faster start (in {self.folder}, once)", file=sys.stderr)
            try:
                if SparkContext._active_spark_context is not None:
                    SparkContext._active_spark_context.stop()
            except Exception:  # the JVM may be gone already; its exit code says whether the archive is whole
                pass
            try:
                proc.stdin.close()  # the JVM exits when its stdin closes (PySpark's gateway)
                code = proc.wait(timeout=WRITE_TIMEOUT)
            except Exception:
                return
            size = self.partial.stat().st_size if self.partial.is_file() else 0
            if code == 0 and size > 0:
                self.path = self.folder / f"spark-{self.digest}-{size}{self.suffix}"
                os.replace(self.partial, self.path)
        finally:
            for f in (self.partial, self.partial.with_name(self.partial.name + ".config"), self.lock):
                try:
                    f.unlink()
                except OSError:
                    pass


_pending: ClassArchive | None = None
_status = "off"


def status() -> str:
    """What the JVM this process started does with the archive: ``mapped``, ``written at exit``,
    ``none (another process is writing it)``, or ``off`` (SSE_CLASS_ARCHIVE=off, or a JVM this
    process joined)."""
    return _status


def finish() -> None:
    """Write the class archive if this process's JVM was started to write it (once)."""
    global _pending
    archive, _pending = _pending, None
    if archive is not None:
        archive.finish()
