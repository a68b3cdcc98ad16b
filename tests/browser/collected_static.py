"""A live server that serves static files as production does: collectstatic's hashed,
gzipped copies through whitenoise (pytest-django's live_server serves the plain files
through Django's finders instead, with no cache headers and no compression)."""
import pytest
from django.core.management import call_command

# What no measured page loads; left out to keep collectstatic short (the map's full plotly too).
NOT_COLLECTED = ["admin", "rest_framework", "drf_spectacular_sidecar", "plotly.min.js"]


@pytest.fixture
def production_static_server(tmp_path, settings, transactional_db):
    from django.db import connections
    from django.test.testcases import LiveServerThread

    # Production's storage, whatever the test settings use; both reset the storage (setting_changed).
    settings.STORAGES = {**settings.STORAGES,
                         "staticfiles": {"BACKEND": "archive_site.static_storage.HashedStaticFilesStorage"}}
    settings.STATIC_ROOT = tmp_path / "staticfiles"
    call_command("collectstatic", interactive=False, verbosity=0, ignore_patterns=NOT_COLLECTED)
    shared = {c.alias: c for c in connections.all() if c.vendor == "sqlite" and c.is_in_memory_db()}
    for connection in shared.values():
        connection.inc_thread_sharing()
    # No static handler around the site: whitenoise's middleware serves /static/ from STATIC_ROOT.
    thread = LiveServerThread("localhost", static_handler=lambda handler: handler, connections_override=shared)
    thread.daemon = True
    thread.start()
    thread.is_ready.wait()
    try:
        if thread.error:
            raise thread.error
        yield f"http://localhost:{thread.port}"
    finally:
        thread.terminate()
        for connection in shared.values():
            connection.dec_thread_sharing()
