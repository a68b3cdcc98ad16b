"""Starting the runner process, and starting it early.

``python -m verifier.judge`` spawns the runner before the judge itself imports torch: the
runner's torch import and device start-up (seconds each) then overlap the judge's own, instead
of following them. The early runner runs only this package's code until the judge sends its
setup (which holds the candidate), and the judge hardens itself before that (verifier/judge.py).
Torch-free on purpose: it runs before torch is imported.
"""
import os
import signal
import subprocess
import sys
import tempfile

from . import confine

# The candidate is untrusted: its process sees the toolchain and GPU settings, never the
# caller's credentials (database, Redis, secret key, cloud tokens) or the judge's own files.
_PASSED_VARIABLES = {"PATH", "HOME", "LANG", "LC_ALL", "USER", "LD_LIBRARY_PATH", "CC", "CXX", "MAX_JOBS"}
_PASSED_PREFIXES = ("CUDA_", "TORCH_CUDA", "NVIDIA_", "OMP_", "MKL_", "OPENBLAS_")
PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEVICES = ("cpu", "cuda")


class Spawned:
    """A runner process that waits for its setup: the judge's ends of the channel's pipes, its
    scratch folder, and the judge's children before it existed (the runner's tree is the rest)."""

    def __init__(self, proc, read_fd, write_fd, scratch, known_children, device):
        self.proc, self.read_fd, self.write_fd = proc, read_fd, write_fd
        self.scratch, self.known_children, self.device = scratch, known_children, device

    def discard(self):
        for fd in (self.read_fd, self.write_fd):
            try:
                os.close(fd)
            except OSError:
                pass
        kill_group(self.proc)
        subprocess.run(["rm", "-rf", self.scratch], check=False)


def kill_group(proc):
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


def spawn(device=None):
    """Start ``python -m verifier.runner`` on a fresh pair of pipes. ``device`` ("cpu" or
    "cuda", or None when not known yet) lets the runner start the device before its setup."""
    scratch = tempfile.mkdtemp(prefix="kb_runner_")
    judge_read, runner_write = os.pipe()
    runner_read, judge_write = os.pipe()
    env = {k: v for k, v in os.environ.items() if k in _PASSED_VARIABLES or k.startswith(_PASSED_PREFIXES)}
    env.update(PYTHONPATH=PACKAGE_PARENT, PYTHONDONTWRITEBYTECODE="1", TMPDIR=scratch,
               CUDA_CACHE_PATH=os.path.join(scratch, "cuda_cache"), PYTHONUNBUFFERED="1")
    known_children = set(confine.children_of(os.getpid()))  # before the runner exists
    argv = [sys.executable, "-B", "-m", "verifier.runner", str(runner_read), str(runner_write)]
    if device in DEVICES:
        argv.append(device)
    proc = subprocess.Popen(argv, cwd=scratch, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, pass_fds=(runner_read, runner_write),
                            start_new_session=True, preexec_fn=confine.die_with_parent)
    os.close(runner_read)
    os.close(runner_write)
    return Spawned(proc, judge_read, judge_write, scratch, known_children, device if device in DEVICES else None)


_early = None


def spawn_early(argv):
    """At the top of the judge's ``__main__``: start the runner for the device the command line
    names (or for a device decided later)."""
    global _early
    device = None
    for i, arg in enumerate(argv):
        if arg == "--device" and i + 1 < len(argv):
            device = argv[i + 1]
        elif arg.startswith("--device="):
            device = arg.split("=", 1)[1]
    _early = spawn(device)


def take(device):
    """The runner started early if it suits ``device``, else a new one."""
    global _early
    early, _early = _early, None
    if early is not None and early.device in (None, device) and early.proc.poll() is None:
        return early
    if early is not None:
        early.discard()
    return spawn(device)


def discard_early():
    """The judge stopped before it needed the runner (a bad reference, a CPU run of CUDA code)."""
    global _early
    early, _early = _early, None
    if early is not None:
        early.discard()
