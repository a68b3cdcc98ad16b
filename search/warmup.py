"""Load what search needs once per web process, at start-up, so no reader's first query pays
for it (loading all-MiniLM-L6-v2 and its first encode take seconds on the 2-core machine).

archive_site/wsgi.py and asgi.py call warm_up() when a server (gunicorn, runserver) imports them,
once per worker process. ARCHIVE_SEARCH_WARM_UP=0 (settings.SEARCH_WARM_UP) turns it off (a process
that serves no search).
"""
import logging
import os
import time

from django.conf import settings

logger = logging.getLogger(__name__)


def warm_up() -> float | None:
    """Load the model, encode one query and open the index; seconds taken, None when turned off."""
    if not settings.SEARCH_WARM_UP:
        return None
    from . import storage
    from .embedding import embed_texts
    from .index import IndexUnavailable

    started = time.monotonic()
    embed_texts(["warm-up query"])  # loads the model (lru_cache: once per process) and runs it once
    try:
        storage.index_reader().size()
    except IndexUnavailable:
        pass  # no index yet: search says "rebuilding" and queues one, as before
    seconds = time.monotonic() - started
    logger.info("search warmed up in %.1f s (model loaded once for this process, pid %d)", seconds, os.getpid())
    return seconds
