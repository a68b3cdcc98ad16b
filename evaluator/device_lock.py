"""One measuring run per device at a time, across threads and worker processes (no Django).

A worker builds many candidates at once on the CPU cores, but a timing run or an ncu
profile shares the GPU with nothing else: a second kernel on the same GPU would make both
timings lie. The lock is an exclusive ``flock`` on a file named after the device the
process sees, so every worker thread and every worker process on the host that uses the
same GPU queues on it, and the kernel drops it when a holder dies.
"""
import contextlib
import fcntl
import os
import re
import time
from pathlib import Path


def device_key(device: str) -> str:
    """'cpu', or 'cuda-<CUDA_VISIBLE_DEVICES>' ('cuda-all' when the variable is unset)."""
    if device != "cuda":
        return "cpu"
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").strip() or "all"
    return "cuda-" + re.sub(r"[^A-Za-z0-9_.-]", "_", visible)


@contextlib.contextmanager
def exclusive_device(lock_dir, device: str):
    """Hold the device's lock; yields the seconds spent waiting for it."""
    lock_dir = Path(lock_dir)
    lock_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    # A new open file description per holder: flock then excludes other threads of this
    # process as well as other processes.
    with open(lock_dir / f"{device_key(device)}.lock", "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield time.monotonic() - started
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
