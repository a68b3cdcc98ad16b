"""Starting the runner process, and starting it early.

``python -m verifier.core.judge`` first drops every variable of its caller's environment that is not
the judge's own (``clean_environment``: it runs itself again, so database URLs, secret keys and
tokens never enter its memory), imports torch, and then forks the runner's launcher from itself
(``_fork_launcher``): the runner starts with torch imported, a fork instead of seconds of CPU per
runner, while the judge goes on starting up. The fork holds only what the judge held at that
point: its arguments, its cleaned environment, the modules it imported; no seed or secret is
drawn before it. When the judge cannot be forked safely (it is not the command's main module, or
it has a second thread or a started device), the runner is a fresh interpreter as before. The
runner runs only this package's code until the judge sends its setup (which holds the candidate),
and the judge hardens itself before that (verifier/core/judge.py). Torch-free on purpose.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import warnings

from . import RENAMED_VARIABLES
from . import confine

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing: no module only for annotations
if TYPE_CHECKING:
    from collections.abc import Mapping

# The candidate is untrusted: its process sees the toolchain and GPU settings, never the
# caller's credentials (database, Redis, secret key, cloud tokens) or the judge's own files.
_PASSED_VARIABLES = {"PATH", "HOME", "LANG", "LC_ALL", "USER", "LD_LIBRARY_PATH", "CC", "CXX", "MAX_JOBS"}
_PASSED_PREFIXES = ("CUDA_", "TORCH_CUDA", "NVIDIA_", "OMP_", "MKL_", "OPENBLAS_")
PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # holds verifier/
DEVICES = ("cpu", "cuda")

# What the judge keeps of its caller's environment when it starts (``clean_environment``): the
# runner's set, plus the judge's own settings and the compilers' search paths. Everything else
# (database URLs, secret keys, cloud tokens) never reaches the judge's memory, so a runner forked
# from the judge finds none of it. The verifier's own variables by name (RENAMED_VARIABLES);
# their old names still pass through the prefixes KB_ and HARNESS_, read for one release
# (verifier/CHANGELOG.md): drop those two prefixes with the old names.
_JUDGE_VARIABLES = _PASSED_VARIABLES | set(RENAMED_VARIABLES) | {
    "TMPDIR", "CPATH", "LIBRARY_PATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "TZ", "TERM"}
_JUDGE_PREFIXES = _PASSED_PREFIXES + ("KB_", "HARNESS_", "TORCH", "PYTHON", "LC_", "XDG_", "NCCL_")


def judge_environment(environ: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in environ.items() if k in _JUDGE_VARIABLES or k.startswith(_JUDGE_PREFIXES)}


_clean = False  # set once the judge's environment holds only its own variables


def clean_environment() -> None:
    """At the very top of the judge's ``__main__``, before torch: run again with only the judge's
    variables when the caller passed others (exec replaces the process's memory, so what was
    dropped is nowhere in it)."""
    global _clean
    keep = judge_environment(os.environ)
    if len(keep) != len(os.environ):
        sys.stdout.flush()
        sys.stderr.flush()
        os.execve(sys.executable, sys.orig_argv, keep)
    _clean = True


class Spawned:
    """A runner process that waits for its setup: the judge's ends of the channel's pipes, its
    scratch folder, and the judge's children before it existed (the runner's tree is the rest)."""

    def __init__(self, proc: subprocess.Popen[bytes] | ForkedLauncher, read_fd: int, write_fd: int, scratch: str,
                 known_children: set[int], device: str | None) -> None:
        self.proc, self.read_fd, self.write_fd = proc, read_fd, write_fd
        self.scratch, self.known_children, self.device = scratch, known_children, device

    def discard(self) -> None:
        for fd in (self.read_fd, self.write_fd):
            try:
                os.close(fd)
            except OSError:
                pass
        kill_group(self.proc)
        subprocess.run(["rm", "-rf", self.scratch], check=False)


def kill_group(proc: subprocess.Popen[bytes] | ForkedLauncher) -> None:
    """SIGKILL the runner's process group (the launcher and what it started in that session)
    and reap the launcher."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def spawn(device: str | None = None) -> Spawned:
    """Start ``python -m verifier.core.runner`` on a fresh pair of pipes. ``device`` ("cpu" or
    "cuda", or None when not known yet) lets the runner start the device before its setup."""
    scratch = tempfile.mkdtemp(prefix="kb_runner_")
    judge_read, runner_write = os.pipe()
    runner_read, judge_write = os.pipe()
    env = {k: v for k, v in os.environ.items() if k in _PASSED_VARIABLES or k.startswith(_PASSED_PREFIXES)}
    env.update(PYTHONPATH=PACKAGE_PARENT, PYTHONDONTWRITEBYTECODE="1", TMPDIR=scratch,
               CUDA_CACHE_PATH=os.path.join(scratch, "cuda_cache"), PYTHONUNBUFFERED="1")
    known_children = set(confine.children_of(os.getpid()))  # before the runner exists
    device = device if device in DEVICES else None
    if _forkable():
        proc = _fork_launcher(device, env, scratch, runner_read, runner_write)
    else:
        argv = [sys.executable, "-B", "-m", "verifier.core.runner", str(runner_read), str(runner_write)]
        proc = subprocess.Popen(argv + ([device] if device else []), cwd=scratch, env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                pass_fds=(runner_read, runner_write), start_new_session=True,
                                preexec_fn=confine.die_with_parent)
    os.close(runner_read)
    os.close(runner_write)
    return Spawned(proc, judge_read, judge_write, scratch, known_children, device)


class ForkedLauncher:
    """The runner's launcher forked from the judge: what the judge uses of a ``Popen`` (pid,
    stdout, poll, wait, returncode)."""

    def __init__(self, pid: int, stdout_fd: int) -> None:
        self.pid, self.returncode = pid, None
        self.stdout = open(stdout_fd, "rb")

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                pid, status = self.pid, 255 << 8
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(["verifier.core.runner"], timeout)
            time.sleep(0.005)
        return self.returncode


def _forkable():
    """Forking the judge is as good as starting a fresh runner only while its memory holds nothing
    the candidate may not read (its environment was cleaned at start), it runs no Python thread
    but this one and has started no device (a fork copies neither a thread nor a CUDA context).
    Native thread pools that expect forks may be there: OpenBLAS starts one when numpy loads and
    re-creates it in the child (its fork handlers); torch's own starts at the first parallel
    operation, which the judge has not run when it forks, right after its imports."""
    torch = sys.modules.get("torch")
    return _clean and torch is not None and not torch.cuda.is_initialized() and threading.active_count() == 1


def _fork_launcher(device, env, scratch, read_fd, write_fd):
    """``python -B -m verifier.core.runner READ WRITE [DEVICE]`` without a new interpreter: a fork of the
    judge, which has imported torch already (seconds of CPU a runner no longer spends), set up as
    Popen sets up the exec'd runner: a session of its own, killed with the judge, /dev/null in,
    stdout and stderr to a pipe, its own folder and environment, no other file descriptor."""
    out_read, out_write = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    with warnings.catch_warnings():  # Python 3.12 warns of any native thread; see _forkable
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid:
        os.close(out_write)
        return ForkedLauncher(pid, out_read)
    try:
        os.setsid()
        confine.die_with_parent()
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out_write, 1)
        os.dup2(out_write, 2)
        for fd in map(int, os.listdir("/proc/self/fd")):
            if fd not in (0, 1, 2, read_fd, write_fd):
                try:
                    os.close(fd)
                except OSError:
                    pass
        os.chdir(scratch)
        os.environ.clear()
        os.environ.update(env)
        tempfile.tempdir = None  # the judge's choice, cached when it made the scratch folder
        sys.path[0:1] = [scratch] + ([] if PACKAGE_PARENT in sys.path else [PACKAGE_PARENT])  # as PYTHONPATH
        sys.argv = [os.path.join(os.path.dirname(__file__), "runner.py"), str(read_fd), str(write_fd)] + (
            [device] if device else [])
        sys.dont_write_bytecode = True
        from verifier.core import runner

        runner.launch(read_fd, write_fd, device)  # does not return
    except BaseException:  # the launcher itself broke: the judge sees the channel close
        traceback.print_exc()
        sys.stderr.flush()
    finally:
        os._exit(70)


_early = None


def spawn_early(argv: list[str]) -> None:
    """In the judge's ``__main__`` once its imports are done (or in a judge a server forked): start
    the runner for the device the command line names (or for a device decided later)."""
    global _early
    device = None
    for i, arg in enumerate(argv):
        if arg == "--device" and i + 1 < len(argv):
            device = argv[i + 1]
        elif arg.startswith("--device="):
            device = arg.split("=", 1)[1]
    _early = spawn(device)


def take(device: str) -> Spawned:
    """The runner started early if it suits ``device``, else a new one."""
    global _early
    early, _early = _early, None
    if early is not None and early.device in (None, device) and early.proc.poll() is None:
        return early
    if early is not None:
        early.discard()
    return spawn(device)


def discard_early() -> None:
    """The judge stopped before it needed the runner (a bad reference, a CPU run of CUDA code)."""
    global _early
    early, _early = _early, None
    if early is not None:
        early.discard()
