"""Who may use a GPU while a kernel is being timed (no Django; ships in the bundle).

A worker runs many kernels on one GPU. Correctness trials may share it: they only need the
right answer. A timing loop, or ncu's profiled window, must have it alone, or both kernels'
numbers lie. So each device has a reader-writer lock made of two ``flock`` files in a lock
directory shared by every worker process on the host:

- ``<device>.lock``: held shared by every process doing GPU work, exclusive by the one
  measuring;
- ``<device>.gate``: taken (exclusive, briefly) before asking for either, so a process
  queueing for exclusive use stops new shared holders from starving it;
- ``<device>.writers``: held shared by every process that waits for or holds the device
  alone; a process asking for shared use first waits until nobody holds it. So once the
  shared holders have drained for one exclusive holder, every exclusive request queued by
  then is served before a new shared holder comes in: one drain serves a batch of timing
  loops and ncu windows, instead of one drain each (with the gate alone, a new judge that won
  the gate between two queued timings had to finish its whole correctness phase before the
  second timing could start: the ~60 s each job waited for the GPU on the H200). Exclusive
  requests come only from processes already running (a judge reaching its timing, a profile
  driver loaded), so shared holders wait at most for those.

No process ever holds the lock while it waits at the gate: ``ProcessHold.alone`` gives up
the shared hold before queueing for exclusive use. (Upgrading in place deadlocks: two shared
holders that both ask for exclusive use wait on each other.) Afterwards it turns its exclusive
hold into a shared one in place (``DeviceLock.downgrade``) instead of queueing again: queueing
as a new shared holder waits for every exclusive request queued meanwhile, and on the H200 (24
jobs on 16 cores) judges done with their timing waited 220 s there to finish. The kernel
releases a dead holder's locks.

The harness (shared from start to end, alone while timing) and the profile driver (alone
from its first candidate call to the end of the profiled window) hold their device through
``ProcessHold.from_environment`` when the worker sets ``VERIFIER_DEVICE_LOCK_DIR``; anywhere else
(a user running a bundle) they lock nothing.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING

from . import environ_get

if TYPE_CHECKING:
    from collections.abc import Iterator
    from contextlib import AbstractContextManager
    from typing import TextIO

LOCK_DIR_VARIABLE = "VERIFIER_DEVICE_LOCK_DIR"


def device_key(device: str) -> str:
    """'cpu', or 'cuda-<CUDA_VISIBLE_DEVICES>' ('cuda-all' when the variable is unset)."""
    if device != "cuda":
        return "cpu"
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").strip() or "all"
    return "cuda-" + re.sub(r"[^A-Za-z0-9_.-]", "_", visible)


class DeviceLock:
    """The reader-writer lock of one device. Each acquisition opens its own file
    description, so holders in different threads of one process exclude each other too."""

    def __init__(self, lock_dir: str | Path, device: str) -> None:
        lock_dir = Path(lock_dir)
        lock_dir.mkdir(parents=True, exist_ok=True)
        key = device_key(device)
        self.lock_path = lock_dir / f"{key}.lock"
        self.gate_path = lock_dir / f"{key}.gate"
        self.writers_path = lock_dir / f"{key}.writers"

    def acquire(self, mode: int) -> TextIO:
        """Queue at the gate, then take the lock in ``fcntl.LOCK_SH`` or ``LOCK_EX`` mode; returns
        the open lock file (close it, or ``release`` it, to let go). Shared requests first wait
        until no exclusive request is queued or held (the writers file)."""
        handle = open(self.lock_path, "a+")
        handle.kb_writers = None
        try:
            if mode == fcntl.LOCK_EX:  # announced until released: shared requests wait behind it
                handle.kb_writers = open(self.writers_path, "a+")
                fcntl.flock(handle.kb_writers, fcntl.LOCK_SH)
            else:
                with open(self.writers_path, "a+") as writers:
                    fcntl.flock(writers, fcntl.LOCK_EX)
            with open(self.gate_path, "a+") as gate:
                fcntl.flock(gate, fcntl.LOCK_EX)
                fcntl.flock(handle, mode)
        except BaseException:
            self._close(handle)
            raise
        return handle

    @staticmethod
    def downgrade(handle: TextIO) -> TextIO:
        """Exclusive to shared on the same open file (flock converts in place; an exclusive
        request already waiting may be served in between, then this waits for that one only).
        The exclusive announcement ends: shared requests queued behind it may come in."""
        fcntl.flock(handle, fcntl.LOCK_SH)
        writers, handle.kb_writers = getattr(handle, "kb_writers", None), None
        if writers is not None:
            writers.close()
        return handle

    @classmethod
    def release(cls, handle: TextIO) -> None:
        fcntl.flock(handle, fcntl.LOCK_UN)
        cls._close(handle)

    @staticmethod
    def _close(handle) -> None:
        handle.close()
        writers = getattr(handle, "kb_writers", None)
        if writers is not None:
            writers.close()

    @contextlib.contextmanager
    def held(self, mode: int) -> Iterator[float]:
        """Hold the lock in this mode; yields the seconds spent waiting for it."""
        started = time.monotonic()
        handle = self.acquire(mode)
        try:
            yield time.monotonic() - started
        finally:
            self.release(handle)

    def shared(self) -> AbstractContextManager[float]:
        return self.held(fcntl.LOCK_SH)

    def exclusive(self) -> AbstractContextManager[float]:
        return self.held(fcntl.LOCK_EX)


class ProcessHold:
    """One process's use of its device: shared from ``start`` to exit, exclusive inside ``alone``.

    ``stats`` reports the waits and how long the device was held alone, for the worker's record.
    """

    def __init__(self, lock: DeviceLock | None) -> None:
        self.lock = lock
        self.handle = None
        self.stats = {"shared_wait_s": 0.0, "exclusive_wait_s": 0.0, "exclusive_held_s": 0.0}

    @classmethod
    def from_environment(cls, device: str) -> "ProcessHold":
        lock_dir = environ_get(LOCK_DIR_VARIABLE)
        return cls(DeviceLock(lock_dir, device) if lock_dir else None)

    def start(self) -> None:
        if self.lock is None or self.handle is not None:
            return
        started = time.monotonic()
        self.handle = self.lock.acquire(fcntl.LOCK_SH)
        self.stats["shared_wait_s"] += time.monotonic() - started

    def stop(self) -> None:
        if self.handle is not None:
            self.lock.release(self.handle)
            self.handle = None

    @contextlib.contextmanager
    def alone(self) -> Iterator[None]:
        """The device to this process only (a timing loop, a profiled window)."""
        if self.lock is None:
            yield
            return
        was_shared = self.handle is not None
        if was_shared:  # never wait at the gate while holding the lock
            self.lock.release(self.handle)
            self.handle = None
        started = time.monotonic()
        handle = self.lock.acquire(fcntl.LOCK_EX)
        waited = time.monotonic() - started
        self.stats["exclusive_wait_s"] += waited
        try:
            yield
        finally:
            self.stats["exclusive_held_s"] += time.monotonic() - started - waited
            if was_shared:  # shared again without queueing behind the timings that arrived meanwhile
                self.handle = self.lock.downgrade(handle)
            else:
                self.lock.release(handle)

    def report(self) -> dict | None:
        if self.lock is None:
            return None
        return {key: round(value, 3) for key, value in self.stats.items()}
