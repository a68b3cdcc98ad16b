"""Private PostgreSQL and Redis servers for fault tests: each in its own temporary folder on a
free port of 127.0.0.1, so a test may restart or kill it without touching the shared servers
(5432, 6379) that other tests and people use."""
import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_port(port: int, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout_s} s")


def postgres_bin_dir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return Path(found[-1]).parent if found else None


class PrivatePostgres:
    """initdb + pg_ctl in a temporary folder. PostgreSQL refuses to run as root, so as root the
    folder is given to the `postgres` user and the binaries run through runuser."""

    def __init__(self):
        self.bin = postgres_bin_dir()
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="kernel-archive-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self._as = []
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
            self._as = ["runuser", "-u", "postgres", "--"]

    def _run(self, *args, check=True) -> subprocess.CompletedProcess:
        done = subprocess.run([*self._as, *args], capture_output=True, text=True, timeout=120)
        if check and done.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed ({done.returncode}): {done.stderr}\n"
                               f"{self.log.read_text() if self.log.exists() else ''}")
        return done

    def start(self) -> "PrivatePostgres":
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust",
                  "--encoding=UTF8", "--no-sync")
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-w", "-o",
                  f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1", "start")
        return self

    def restart(self, mode: str = "immediate") -> None:
        """`immediate`: the server dies as if it crashed (no checkpoint), then recovers."""
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-w", "-m", mode,
                  "restart")

    def url(self, database: str = "postgres") -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def stop(self) -> None:
        if self.data.exists():
            self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-w", "-m", "immediate", "stop", check=False)
        shutil.rmtree(self.root, ignore_errors=True)


class PrivateRedis:
    """redis-server with an append-only file fsynced on every write (and no RDB snapshots), so
    what it acknowledged survives it being killed and is read back when it starts again."""

    def __init__(self):
        self.binary = shutil.which("redis-server")
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="kernel-archive-redis-"))
        self.process: subprocess.Popen | None = None

    def start(self) -> "PrivateRedis":
        log = (self.root / "server.log").open("ab")
        self.process = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.root),
             "--appendonly", "yes", "--appendfsync", "always", "--save", "", "--daemonize", "no"],
            stdout=log, stderr=log, start_new_session=True)
        wait_for_port(self.port)
        return self

    def kill(self) -> None:
        """SIGKILL: no shutdown save, only what the append-only file already holds survives."""
        self.process.kill()
        self.process.wait(timeout=30)

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)
        shutil.rmtree(self.root, ignore_errors=True)


def manage(env: dict, *args, check: bool = True, timeout: float = 600) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=timeout)
    if check:
        assert done.returncode == 0, f"manage.py {' '.join(args)}: {done.stderr[-3000:]}"
    return done


def base_env(data_dir: Path, **extra) -> dict:
    env = dict(os.environ, ARCHIVE_DATA_DIR=str(data_dir), PYTHONUNBUFFERED="1")
    for name in ("DATABASE_URL", "REDIS_URL", "HUEY_IMMEDIATE"):
        env.pop(name, None)
    env.update(extra)
    return env
