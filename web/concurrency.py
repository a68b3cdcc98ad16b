"""A cap on expensive requests running at once in one web process (settings.EXPENSIVE_CONCURRENCY).

A counting semaphore that never waits: a request that finds every place taken is answered at
once (503 with Retry-After, archive_site/security.py) instead of queueing in front of plain
pages on the process's few threads. The limit is read at each request so a test's override
applies. A streamed response keeps its place until its last byte is sent (held_until_closed).
"""
import threading
import weakref

from django.conf import settings


class ExpensiveSlots:
    def __init__(self):
        self._lock = threading.Lock()
        self.busy = 0

    def take(self) -> bool:
        """A place for one expensive request, or False when the process already runs its limit."""
        limit = settings.EXPENSIVE_CONCURRENCY
        with self._lock:
            if limit and self.busy >= limit:
                return False
            self.busy += 1
            return True

    def give_back(self) -> None:
        with self._lock:
            self.busy -= 1


SLOTS = ExpensiveSlots()


class held_until_closed:
    """A streamed body that gives its place back when the server closes the response (after
    the last byte, or when the client went away): Django registers its close() with the response.
    Also when the body is dropped unclosed, so that no place is ever lost for good."""

    def __init__(self, iterable, release):
        self._iterator = iter(iterable)
        self._release = weakref.finalize(self, release)  # runs once: at close() or when collected

    def __iter__(self):
        return self._iterator

    def close(self):
        self._release()
