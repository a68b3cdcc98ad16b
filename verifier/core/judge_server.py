"""Judges without a torch import each: ``python -m verifier.core.judge_server SOCKET`` imports the judge
once, then forks one judge process per request on a Unix socket.

Every judge started with ``python -m verifier.core.judge`` spends about 2.4 CPU seconds importing
torch before it does anything; a caller that starts many (the test suite, a campaign) can start
them from here instead. ``sandbox.run_harness_isolated`` does when ``JUDGE_SERVER_SOCKET`` names a
socket (``serve_in_background`` starts a server and sets it). A served judge is the same process
a new one would be: a session of its own, the sandbox's CPU and address-space limits, stdout and
stderr to the sandbox's files, /dev/null in, its own folder and environment, no other file
descriptor; it runs ``judge.main`` and forks its runner as ``python -m verifier.core.judge`` does.

What the server holds is what a judge holds before its arguments: torch and this package. It
takes requests only from its own user (the socket's folder is private, the peer's uid is
checked), and requests carry only the judge's own environment variables
(``runner_start.judge_environment``): the caller's credentials never reach it, so no judge or
runner forked from it can find them. The server never starts a device and runs one thread, so
each fork is as good as a fresh interpreter (``runner_start._forkable``).

Protocol: the client sends one JSON line ``{"argv", "cwd", "env", "cpu_seconds",
"address_space"}`` with its stdout and stderr file descriptors attached; the server answers one
line ``{"pid": N}`` when the judge has started and one line ``{"returncode": R}`` (negative: the
signal) when it has ended. No Django.
"""
from __future__ import annotations

import array
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

if __name__ == "__main__":
    from verifier.core import runner_start

    runner_start.clean_environment()

from verifier.core import runner_start  # noqa: E402

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing: no module only for annotations
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import IO, Any, NoReturn

SOCKET_VARIABLE = "JUDGE_SERVER_SOCKET"
_MAX_REQUEST = 1 << 20


def _run_judge(request, out_fd, err_fd):
    """In the forked child: become the judge process the sandbox would have started."""
    try:
        from verifier.core import process_limits

        os.setsid()
        process_limits.limits(request.get("cpu_seconds"), request.get("address_space"))()  # as its preexec_fn
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        for fd in map(int, os.listdir("/proc/self/fd")):
            if fd > 2:
                try:
                    os.close(fd)
                except OSError:
                    pass
        if request.get("cwd"):
            os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(runner_start.judge_environment(request["env"]))
        tempfile.tempdir = None
        args = [str(a) for a in request["argv"]]
        sys.argv = [os.path.join(os.path.dirname(__file__), "judge.py")] + args
        from verifier.core import judge

        runner_start.spawn_early(args)
        code = judge.main(args)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code or 0)
    except SystemExit as exc:
        sys.stdout.flush()
        os._exit(exc.code if isinstance(exc.code, int) else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
        sys.stderr.flush()
    os._exit(70)


def _receive(conn):
    """(request, [fds]) from one connection, or (None, []) when it is not a request."""
    fds = array.array("i")
    data, ancillary, _, _ = conn.recvmsg(_MAX_REQUEST, socket.CMSG_LEN(2 * fds.itemsize))
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[:len(payload) - len(payload) % fds.itemsize])
    while data and not data.endswith(b"\n") and len(data) < _MAX_REQUEST:
        more = conn.recv(_MAX_REQUEST)
        if not more:
            break
        data += more
    try:
        request = json.loads(data)
    except ValueError:
        request = None
    if not isinstance(request, dict) or not isinstance(request.get("argv"), list) or len(fds) != 2:
        for fd in fds:
            os.close(fd)
        return None, []
    return request, list(fds)


def _same_user(conn):
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _, uid, _ = struct.unpack("3i", creds)
    return uid == os.getuid()


def serve(path: str) -> NoReturn:
    """Answer requests on ``path`` until the process is killed (one thread: no thread may exist
    when a judge is forked)."""
    import torch  # noqa: F401  what every judge would import
    from verifier.core import judge  # noqa: F401

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    os.chmod(path, 0o600)
    listener.listen(64)
    running = {}  # pid -> connection waiting for its return code
    print("serving on %s" % path, flush=True)
    while True:
        readable, _, _ = select.select([listener], [], [], 0.05)
        if readable:
            conn, _ = listener.accept()
            request, fds = _receive(conn) if _same_user(conn) else (None, [])
            if request is None:
                conn.close()
            else:
                pid = os.fork()
                if pid == 0:
                    listener.close()
                    _run_judge(request, *fds)
                for fd in fds:
                    os.close(fd)
                conn.sendall(b'{"pid": %d}\n' % pid)
                running[pid] = conn
        gone = select.select(list(running.values()), [], [], 0)[0] if running else []
        for pid, conn in list(running.items()):
            if conn in gone:  # its caller went away (it sends nothing else): the judge goes too
                try:
                    os.killpg(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                conn = running.pop(pid)
                try:
                    conn.sendall(b'{"returncode": %d}\n' % os.waitstatus_to_exitcode(status))
                except OSError:
                    pass
                conn.close()


class ServedJudge:
    """A judge started by a server: what the sandbox uses of a ``Popen`` (pid, poll, wait)."""

    def __init__(self, path: str, argv: Sequence[str], *, cwd: str | os.PathLike[str] | None, env: Mapping[str, str],
                 stdout: IO[Any], stderr: IO[Any], cpu_seconds: float | None, address_space: int | None) -> None:
        self.returncode = None
        self.lock = threading.Lock()  # the sandbox's watchdog polls while its caller waits
        self.conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.conn.connect(path)
        request = {"argv": list(argv), "cwd": None if cwd is None else str(cwd),
                   "env": runner_start.judge_environment(env), "cpu_seconds": cpu_seconds,
                   "address_space": address_space}
        fds = array.array("i", [stdout.fileno(), stderr.fileno()])
        self.conn.sendmsg([json.dumps(request).encode() + b"\n"],
                          [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds.tobytes())])
        self.reader = self.conn.makefile("rb")
        started = json.loads(self.reader.readline() or b"{}")
        if "pid" not in started:
            raise OSError("the judge server at %s did not start the judge" % path)
        self.pid = started["pid"]

    def poll(self) -> int | None:
        with self.lock:
            ready = self.returncode is None and select.select([self.conn], [], [], 0)[0]
        if ready:
            self._read_end()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(["verifier.core.judge"], timeout)
            time.sleep(0.01)
        return self.returncode

    def _read_end(self):
        with self.lock:
            if self.returncode is not None:
                return
            line = self.reader.readline()
            # a server gone before its judge ended: the judge died with it (killed, as the sandbox would)
            self.returncode = json.loads(line)["returncode"] if line else -signal.SIGKILL
            self.reader.close()
            self.conn.close()


def serve_in_background() -> subprocess.Popen[bytes]:
    """Start a server for this process and the processes it starts (``JUDGE_SERVER_SOCKET``); returns
    the server's Popen. The server dies with this process."""
    folder = tempfile.mkdtemp(prefix="kb_judge_server_")
    os.chmod(folder, 0o700)
    path = os.path.join(folder, "socket")
    env = dict(runner_start.judge_environment(os.environ),
               PYTHONPATH=os.pathsep.join([runner_start.PACKAGE_PARENT] + [
                   p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    from verifier.core import confine

    proc = subprocess.Popen([sys.executable, "-m", "verifier.core.judge_server", path], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, start_new_session=True,
                            preexec_fn=confine.die_with_parent)
    if not proc.stdout.readline().startswith(b"serving"):
        proc.kill()
        raise RuntimeError("the judge server did not start")
    os.environ[SOCKET_VARIABLE] = path
    return proc


def serves(argv: Sequence[str], cwd: str | os.PathLike[str] | None) -> bool:
    """Would ``argv`` run in ``cwd`` start this package's judge, which a server here forks? (A
    bundle's folder holds a verifier of its own, which its judge must be.)"""
    if not (len(argv) >= 3 and argv[0] == sys.executable and list(argv[1:3]) == ["-m", "verifier.core.judge"]):
        return False
    own = os.path.join(cwd or os.getcwd(), "verifier")
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # this verifier/, core/'s parent
    return not os.path.isdir(own) or os.path.realpath(own) == os.path.realpath(package)


if __name__ == "__main__":
    serve(sys.argv[1])
