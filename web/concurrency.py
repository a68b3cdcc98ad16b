"""A cap on expensive requests running at once in one web process (settings.EXPENSIVE_CONCURRENCY).

A counting semaphore that never waits: a request that finds every place taken is answered at
once (503 with Retry-After, archive_site/security.py) instead of queueing in front of plain
pages on the process's few threads. The limit is read at each request so a test's override
applies. A streamed response keeps its place until its last byte is sent (held_until_closed).
"""
import threading
import time
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


# A streamed body rests this many times as long as it took to make each chunk: an export (seconds
# of CPU, batch after batch) then takes at most about a third of a core, and the pages served
# beside it by the same process and host keep the rest (docs/decisions/expensive_requests.md).
STREAM_REST_SHARE = 2.0


class held_until_closed:
    """A streamed body that gives its place back when the server closes the response (after
    the last byte, or when the client went away): Django registers its close() with the response.
    Also when the body is dropped unclosed, so that no place is ever lost for good. Between
    chunks it rests (STREAM_REST_SHARE), leaving the CPU and the GIL to plain requests."""

    def __init__(self, iterable, release):
        self._iterator = iter(iterable)
        self._release = weakref.finalize(self, release)  # runs once: at close() or when collected

    def __iter__(self):
        while True:
            started = time.perf_counter()
            try:
                chunk = next(self._iterator)
            except StopIteration:
                return
            busy_s = time.perf_counter() - started
            yield chunk
            time.sleep(busy_s * STREAM_REST_SHARE)

    def close(self):
        self._release()
