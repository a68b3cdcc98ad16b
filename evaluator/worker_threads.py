"""The worker process's own threads: the lease sweeper (one per process, started when the worker
starts) and the heartbeat of a running job. The rows they touch are written by services
(evaluator/services.py: `verification_recover_stalled`, `verification_heartbeat`); this module
holds only the threads that call them, so it imports no service and the services import it.

A running job's row is its lease (docs/worker.md, "The lease"): the heartbeat renews it while the
harness runs in its subprocess, and every worker's sweeper re-queues the jobs whose lease expired.
"""
import logging
import threading
import time
from collections.abc import Callable

from django.conf import settings
from django.db import close_old_connections

log = logging.getLogger(__name__)

_lease_sweeper = None
_lease_sweeper_guard = threading.Lock()


def verification_lease_sweeper_start(*, every_s: float, sweep: Callable[[], dict]) -> threading.Thread | None:
    """Start this process's one lease sweeper: a thread that calls ``sweep`` (the service
    `verification_recover_stalled`, which re-queues the jobs of dead workers) every ``every_s``
    seconds, so while any worker runs, a job of a host that died is retried within about
    ARCHIVE_VERIFY_STALE_AFTER_S + every_s. None when off (``every_s`` <= 0). Sweeps of several
    workers race safely: each re-queue is a conditional UPDATE."""
    global _lease_sweeper
    with _lease_sweeper_guard:
        if every_s > 0 and _lease_sweeper is None:
            _lease_sweeper = threading.Thread(target=_sweep_leases, args=(every_s, sweep), name="lease-sweeper",
                                              daemon=True)
            _lease_sweeper.start()
        return _lease_sweeper


def _sweep_leases(every_s: float, sweep: Callable[[], dict]) -> None:
    while True:
        time.sleep(every_s)
        try:
            swept = sweep()
            if swept["requeued"] or swept["given_up"]:
                log.warning("expired leases: re-queued verifications %s, gave up on %s", swept["requeued"],
                            swept["given_up"])
        except Exception:  # a database outage must not end the sweeps
            log.exception("lease sweep failed; the next one is in %s s", every_s)
        finally:
            close_old_connections()


class Heartbeat:
    """Calls ``beat()`` (a lease renewal: `services.verification_heartbeat`) from a thread every
    ARCHIVE_VERIFY_HEARTBEAT_S seconds while the ``with`` block runs (the harness, in its subprocess)."""

    def __init__(self, beat: Callable[[], object]):
        self.beat = beat
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._beat, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()

    def _beat(self):
        try:
            while not self.stop.wait(settings.VERIFY_HEARTBEAT_S):
                self.beat()
        finally:
            close_old_connections()
