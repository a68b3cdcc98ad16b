"""Sharing one GPU between harness processes without disturbing what they measure (no Django).

A worker runs many verifications at once. Their builds need no GPU; their correctness trials
may share one; a timing run or a profiler's window must have the GPU to itself, or both
numbers lie. When ``$KB_DEVICE_LOCK`` names a lock file (the worker sets one per GPU), a
process holds it shared while it uses the GPU (``hold_shared``) and exclusively around a
timing or profiling window (``exclusive``). A second file, the gate, gives a process waiting
for exclusive use priority over new shared holders, so a stream of correctness runs cannot
starve a timing run. The kernel drops a dead holder's locks. Unset, nothing is locked (a user
running a bundle on their own machine).

This file ships inside the verification bundle with the other harness*.py files.
"""
import contextlib
import fcntl
import os
import time

ENV = "KB_DEVICE_LOCK"


class DeviceLock:
    def __init__(self, path):
        self.path = path
        self.main = self.gate = None
        self.waited = {"shared_s": 0.0, "exclusive_s": 0.0}
        self.held_exclusive_s = 0.0

    def _open(self):
        if self.main is None:
            self.main = open(self.path, "a+")
            self.gate = open(self.path + ".gate", "a+")

    def _take(self, mode):
        started = time.monotonic()
        fcntl.flock(self.gate, fcntl.LOCK_EX)  # queue behind anyone waiting for exclusive use
        try:
            fcntl.flock(self.main, mode)
        finally:
            fcntl.flock(self.gate, fcntl.LOCK_UN)
        return time.monotonic() - started

    def hold_shared(self):
        if not self.path:
            return
        self._open()
        self.waited["shared_s"] += self._take(fcntl.LOCK_SH)

    @contextlib.contextmanager
    def exclusive(self):
        if not self.path:
            yield
            return
        self._open()
        self.waited["exclusive_s"] += self._take(fcntl.LOCK_EX)
        started = time.monotonic()
        try:
            yield
        finally:
            self.held_exclusive_s += time.monotonic() - started
            fcntl.flock(self.main, fcntl.LOCK_SH)  # back to sharing the GPU

    def report(self):
        if not self.path:
            return None
        return {"lock": os.path.basename(self.path), "wait_shared_s": round(self.waited["shared_s"], 3),
                "wait_exclusive_s": round(self.waited["exclusive_s"], 3),
                "held_exclusive_s": round(self.held_exclusive_s, 3)}


DEVICE_LOCK = DeviceLock(os.environ.get(ENV) or None)
