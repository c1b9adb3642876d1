"""Spark on loopback from what the pyspark package ships: a standalone cluster (one master and N
workers, each its own JVM, ``bin/spark-class``) and a Spark Connect server (``sbin/start-connect-server.sh``).
For tests, benchmarks, and trying the engine against a real ``spark://`` master or ``sc://`` server on
one machine:

    with LocalCluster(workers=2) as c:
        subprocess.run([sys.executable, "-m", "engine", "check", "counter", "--master", c.master_url])
    with LocalConnectServer() as s:
        subprocess.run([sys.executable, "-m", "engine", "check", "counter", "--remote", s.url])

Executors run on the workers, not in the driver: everything they read or write must be at a path
they see. On one machine the warehouse's absolute path is that; on a real cluster it must be a
shared filesystem or object store mount (a Unity Catalog volume on Databricks).
"""
from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path


__all__ = ["LocalCluster", "LocalConnectServer", "spark_home"]


def spark_home() -> Path:
    import pyspark
    return Path(os.environ.get("SPARK_HOME") or Path(pyspark.__file__).parent)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalCluster:
    """``private``: a folder the workers and their executors see as an empty one of their own (a
    tmpfs mounted over it in a mount namespace, ``unshare -m``; root only): a warehouse there is one
    the driver sees and the executors do not, as on a cluster without a shared filesystem."""

    def __init__(self, workers: int = 2, cores: int = 1, memory: str = "1536m", log_dir: Path | None = None,
                 timeout: float = 180.0, private: Path | None = None):
        self.workers, self.cores, self.memory, self.timeout = workers, cores, memory, timeout
        self.private = private
        self.log_dir = Path(log_dir or Path.cwd() / "spark-cluster-logs")
        self.port = _free_port()
        self.master_url = f"spark://127.0.0.1:{self.port}"
        self.procs: list[subprocess.Popen] = []
        self.env = {**os.environ, "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": "127.0.0.1",
                    "PYSPARK_PYTHON": sys.executable, "SPARK_NO_DAEMONIZE": "1"}

    def _start(self, name: str, *args: str, private: bool = False) -> subprocess.Popen:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.log_dir / f"{name}.log", "w")
        cmd = [str(spark_home() / "bin" / "spark-class"), *args]
        if private and self.private is not None:
            cmd = ["unshare", "-m", "sh", "-c", f'mount -t tmpfs none "{self.private}" && exec "$0" "$@"', *cmd]
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=self.env, start_new_session=True)
        self.procs.append(proc)
        return proc

    def _wait_for(self, name: str, pattern: str, count: int = 1) -> None:
        deadline = time.time() + self.timeout
        path = self.log_dir / f"{name}.log"
        while time.time() < deadline:
            text = path.read_text(errors="replace") if path.exists() else ""
            if len(re.findall(pattern, text)) >= count:
                return
            dead = [p for p in self.procs if p.poll() is not None]
            if dead:
                raise RuntimeError(f"a cluster process exited ({dead[0].args[1:3]}, code {dead[0].returncode}); "
                                   f"see {self.log_dir}")
            time.sleep(0.5)
        raise TimeoutError(f"cluster: no '{pattern}' x{count} in {path} after {self.timeout:.0f}s")

    def start(self) -> "LocalCluster":
        try:
            self._start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                        "--port", str(self.port), "--webui-port", str(_free_port()))
            self._wait_for("master", r"I have been elected leader")
            for i in range(self.workers):
                work = self.log_dir / f"worker-{i}-work"
                self._start(f"worker-{i}", "org.apache.spark.deploy.worker.Worker", self.master_url,
                            "--host", "127.0.0.1", "--cores", str(self.cores), "--memory", self.memory,
                            "--webui-port", str(_free_port()), "--work-dir", str(work), private=True)
            self._wait_for("master", r"Registering worker", self.workers)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop every JVM this cluster started (its own process groups: the workers' executors too)."""
        for p in reversed(self.procs):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for p in self.procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        self.procs = []

    def __enter__(self) -> "LocalCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


CONNECT_SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


class LocalConnectServer:
    """A Spark Connect server on loopback (``sc://127.0.0.1:PORT``), started with the scripts the
    pyspark package ships, on ``master``; stopped, with its JVM, whatever happens."""

    def __init__(self, master: str = "local[2]", driver_memory: str = "4g", folder: Path | None = None,
                 timeout: float = 240.0, conf: dict[str, str] | None = None):
        import tempfile
        self.master, self.driver_memory, self.timeout = master, driver_memory, timeout
        self.folder = Path(folder or tempfile.mkdtemp(prefix="sse-connect-"))
        self.port = _free_port()
        self.url = f"sc://127.0.0.1:{self.port}"
        self.conf = dict(conf or {})
        self.env = {**os.environ, "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": "127.0.0.1",
                    "SPARK_PID_DIR": str(self.folder), "SPARK_LOG_DIR": str(self.folder),
                    "PYSPARK_PYTHON": sys.executable, "SPARK_CONNECT_MODE": "0"}
        self.env.pop("SPARK_REMOTE", None)

    @staticmethod
    def launcher() -> list[str]:
        """The command that starts the server as a daemon: ``sbin/start-connect-server.sh`` where the
        package ships it, else what that script runs, ``sbin/spark-daemon.sh submit`` of the server's
        class (PySpark 4.0's wheel has the daemon script and the server's jar, not the start script).
        RuntimeError when the package has neither."""
        home = spark_home()
        script = home / "sbin" / "start-connect-server.sh"
        if script.is_file():
            return [str(script)]
        daemon = home / "sbin" / "spark-daemon.sh"
        if daemon.is_file() and any((home / "jars").glob("spark-connect_*.jar")):
            return [str(daemon), "submit", CONNECT_SERVER_CLASS, "1", "--name", "Spark Connect server"]
        raise RuntimeError(f"this PySpark ({home}) ships neither sbin/start-connect-server.sh nor "
                           "sbin/spark-daemon.sh with the Spark Connect server's jar")

    def start(self) -> "LocalConnectServer":
        conf = {"spark.connect.grpc.binding.port": str(self.port), "spark.connect.grpc.binding.address": "127.0.0.1",
                "spark.ui.enabled": "false", **self.conf}
        args = [*self.launcher(), "--master", self.master, "--driver-memory", self.driver_memory]
        for k, v in conf.items():
            args += ["--conf", f"{k}={v}"]
        subprocess.run(args, env=self.env, check=True, capture_output=True, timeout=60)
        deadline = time.time() + self.timeout
        while time.time() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return self
            except OSError:
                if not self.pids():
                    break
                time.sleep(0.5)
        logs = "".join(p.read_text(errors="replace")[-2000:] for p in self.folder.glob("*.out"))
        self.stop()
        raise RuntimeError(f"the Spark Connect server did not listen at {self.url}: {logs}")

    def pids(self) -> list[int]:
        out = []
        for f in self.folder.glob("*.pid"):
            try:
                pid = int(f.read_text().strip())
                os.kill(pid, 0)
                out.append(pid)
            except (OSError, ValueError):
                pass
        return out

    def stop(self) -> None:
        stop = spark_home() / "sbin" / "stop-connect-server.sh"
        argv = [str(stop)] if stop.is_file() else [str(spark_home() / "sbin" / "spark-daemon.sh"), "stop",
                                                    CONNECT_SERVER_CLASS, "1"]
        if Path(argv[0]).is_file():
            subprocess.run(argv, env=self.env, capture_output=True, timeout=120)
        for pid in self.pids():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)

    def __enter__(self) -> "LocalConnectServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
