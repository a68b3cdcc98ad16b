"""A pytest plugin (pytest.ini loads it with -p): under pytest-xdist each worker gets a data
folder of its own (Huey's SQLite queue, uploads, search files), so one worker's queued jobs
never show up in another worker's checks. It must run before pytest-django imports the
settings, which read ARCHIVE_DATA_DIR once; conftest.py files load too late for that."""
import os
import tempfile

if os.environ.get("PYTEST_XDIST_WORKER"):
    _root = os.environ.get("ARCHIVE_DATA_DIR") or tempfile.mkdtemp(prefix="kernel-archive-tests-")
    os.environ["ARCHIVE_DATA_DIR"] = os.path.join(_root, os.environ["PYTEST_XDIST_WORKER"])
