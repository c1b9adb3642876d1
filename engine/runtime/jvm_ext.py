"""The engine's own JVM code (engine/runtime/jvm/*.java): compiled once a machine.

- ``sse_row_bytes`` (RowBytes.java): the fingerprint (engine.search.encoding) hashes a state's bytes in
  Spark's binary row format; Spark has no SQL function that gives them, so the engine adds one, a
  Catalyst expression with its own generated code.
- ``sse_seen`` (SeenSet.java): the seen fingerprints held in the JVM that runs the tasks (local
  mode), so that the actions' job sends the driver whole rows of new states only (engine.search.seen_filter).

The sources are compiled with the JDK's ``javac`` against the installed PySpark's jars
into ``sse-ext-<digest>.jar`` in the engine's cache folder (``$XDG_CACHE_HOME/sse``, or
``~/.cache/sse``; the setting ``jvm_ext`` names another folder), once; the digest covers the
source, PySpark's version and the compiler, so a new one of either makes a new jar. The jar goes on
the class path of the JVM PySpark starts; in a JVM that is already running (a Databricks cluster) it
is added with ``ADD JAR`` and the function registered through the session's class loader.

Without a JDK (``javac`` on the PATH or in ``$JAVA_HOME/bin``) the engine fingerprints states as
JSON text instead (slower; the setting ``fingerprint=json`` chooses it), and says so once on stderr.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import engine.runtime.cache as engine_cache
from engine.errors import EngineError
from engine.settings import Settings

__all__ = ["SOURCES", "available", "forget", "has_class", "jar", "javac", "jdk_tool", "register"]

FOLDER = Path(__file__).resolve().parent / "jvm"
SOURCES = sorted(FOLDER.glob("*.java"))
SOURCE = FOLDER / "RowBytes.java"  # the fingerprint's, named in errors
CLASSES = [f"sse.{s.stem}" for s in SOURCES]  # each has a static register(SparkSession)
COMPILE_TIMEOUT = 300

_jar: Path | None = None
_unavailable: str | None = None  # why there is no jar, once known
_registered: dict[int, bool] = {}  # id of a JVM session -> whether sse_row_bytes is registered in it


def cache_folder(settings: Settings | None = None) -> Path:
    """Where the jar is kept: the folder the setting ``jvm_ext`` names, else the engine's cache."""
    if settings is not None and settings.jvm_ext is not None:
        return Path(settings.jvm_ext)
    return engine_cache.cache_folder()


def jdk_tool(name: str) -> Path | None:
    """A JDK command (``javac``, ``jar``): ``$JAVA_HOME/bin/NAME``, else the one on the PATH."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / name).is_file():
        return Path(home) / "bin" / name
    found = shutil.which(name)
    return Path(found) if found else None


def javac() -> Path | None:
    """The JDK's compiler."""
    return jdk_tool("javac")


def _spark_jars() -> Path:
    import pyspark
    return Path(pyspark.__file__).resolve().parent / "jars"


def _digest(compiler: Path) -> str:
    import pyspark
    h = hashlib.sha256()
    for source in SOURCES:
        h.update(source.name.encode() + b"\0" + source.read_bytes())
    h.update(f"\n{pyspark.__version__}\n{compiler.resolve()}\n".encode())
    return h.hexdigest()[:16]


def jar(settings: Settings | None = None) -> Path:
    """The compiled jar, compiled now if this machine has none for this source, PySpark and JDK.
    Raises EngineError when it cannot be made (no JDK, a compiler error, an unwritable cache)."""
    global _jar
    if _jar is not None and _jar.is_file():
        return _jar
    compiler = javac()
    if compiler is None:
        raise EngineError("no Java compiler (javac) on the PATH or in $JAVA_HOME/bin: the engine's "
                          f"fingerprint function ({SOURCE.name}) needs a JDK, e.g. Debian's openjdk-17-jdk-headless")
    folder = cache_folder(settings)
    target = folder / f"sse-ext-{_digest(compiler)}.jar"
    if not target.is_file():
        try:
            folder.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=folder, prefix=".sse-ext-") as tmp:
                classes = Path(tmp) / "classes"
                _run([str(compiler), "-nowarn", "-encoding", "UTF-8", "-cp", str(_spark_jars() / "*"),
                      "-d", str(classes), *map(str, SOURCES)], "compiling")
                partial = Path(tmp) / "ext.jar"
                jar_tool = compiler.resolve().parent / "jar"  # the same JDK's
                _run([str(jar_tool), "cf", str(partial), "-C", str(classes), "."], "packing")
                os.replace(partial, target)  # whole or absent: other processes may be compiling it too
        except OSError as exc:
            raise EngineError(f"the engine's JVM function could not be written to {folder}: {exc}") from None
    _jar = target
    return target


def _run(argv: list[str], what: str) -> None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=COMPILE_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EngineError(f"{what} {FOLDER}/*.java: {exc}") from None
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()
        raise EngineError(f"{what} {FOLDER}/*.java failed ({argv[0]} exited {done.returncode}): "
                          + " | ".join(detail[:6]))



def available(settings: Settings | None = None, spark=None) -> bool:
    """Whether states can be fingerprinted with ``sse_row_bytes`` in this process: the session
    ``spark`` (else the active one, if any) has the function, or, before Spark starts, the jar exists
    or was compiled now (a JVM PySpark will start gets it)."""
    global _unavailable
    if spark is None:
        from pyspark.sql import SparkSession
        spark = SparkSession.getActiveSession()
    if spark is not None:
        return register(spark, settings)
    if _unavailable is not None:
        return False
    try:
        jar(settings)
        return True
    except EngineError as exc:
        _unavailable = str(exc)
        print(f"engine: fingerprints as JSON text (slower): {exc}", file=sys.stderr)
        return False


def class_path(settings: Settings | None = None) -> str | None:
    """The jar for the class path of a JVM about to start, or None (fingerprints as JSON)."""
    return str(jar(settings)) if available(settings) else None


def disabled(settings: Settings | None) -> set[str]:
    """The helpers the settings tell the accelerator not to use (``disabled_helpers``)."""
    return {n.strip() for n in (settings.disabled_helpers if settings else "").split(",") if n.strip()}


def use(spark, name: str, settings: Settings | None, stage: str, fallback: str) -> bool:
    """Whether the accelerator's ``stage`` may use the helper ``sse.NAME``; where it may not (the
    settings disable it, or it is not loaded), the stage runs as on the portable path, and says so."""
    if name in disabled(settings):
        why = "disabled by the settings"
    elif not has_class(spark, name):
        why = "not loaded"
    else:
        return True
    print(f"engine: {stage}: {fallback} ({name} {why})", file=sys.stderr)
    return False


def has_class(spark, name: str) -> bool:
    """Whether the driver can call the engine's class ``sse.NAME`` through Py4J: the engine's functions
    are registered and the jar is on the class path of the JVM this process started (not only in a
    session's class loader, as after ``ADD JAR``)."""
    return register(spark) and type(getattr(spark._jvm.sse, name)).__name__ == "JavaClass"


def forget(spark) -> None:
    """Drop what ``register`` knows of ``spark``'s session (it is done with): the key is the Python
    object's id, which a later session's object may reuse (engine.platform.server: a session a command)."""
    _registered.pop(id(spark._jsparkSession), None)


def register(spark, settings: Settings | None = None) -> bool:
    """Make the engine's functions (``sse_row_bytes``, ``sse_seen``) functions of ``spark``'s session;
    whether they are (never through Spark Connect, which has no JVM this process can reach)."""
    if not hasattr(spark, "_jsparkSession"):
        return False
    key = id(spark._jsparkSession)
    if key in _registered:
        return _registered[key]
    jvm = spark._jvm
    ok = False
    try:
        for name in CLASSES:  # on the class path of a JVM this process started
            getattr(jvm.sse, name.split(".")[1]).register(spark._jsparkSession)
        ok = True
    except Exception:
        # A JVM this process did not start: add the jar to the session, then reach the class
        # through the session's class loader.
        try:
            spark.sql(f"ADD JAR '{jar(settings)}'")
            loader = spark._jsparkSession.sharedState().jarClassLoader()
            session_cls = jvm.java.lang.Class.forName("org.apache.spark.sql.SparkSession")
            params = jvm.java.lang.reflect.Array.newInstance(jvm.java.lang.Class, 1)
            params[0] = session_cls
            args = jvm.java.lang.reflect.Array.newInstance(jvm.java.lang.Object, 1)
            args[0] = spark._jsparkSession
            for name in CLASSES:
                jvm.java.lang.Class.forName(name, True, loader).getMethod("register", params).invoke(None, args)
            ok = True
        except Exception as exc:  # noqa: BLE001 - any failure means: fingerprint as JSON
            global _unavailable
            _unavailable = _unavailable or f"sse_row_bytes could not be added to the running JVM: {exc}"
    _registered[key] = ok
    return ok
