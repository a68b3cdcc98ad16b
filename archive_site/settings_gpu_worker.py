"""Settings for a host that only runs verifications (``run_huey`` on GPUs).

Such a host needs the harness, the queue and the database, not the web stack's search
(FAISS and the embedding model) or the OpenAPI schema generator, so a GPU image without
those packages can still join the queue: ``DJANGO_SETTINGS_MODULE=archive_site.settings_gpu_worker``.
Give it its own queue (HUEY_QUEUE_NAME) when the web host also queues search-index tasks,
which this host cannot run (docs/worker.md).
"""
from .settings import *  # noqa: F403
from .settings import INSTALLED_APPS

WEB_ONLY_APPS = {"search", "drf_spectacular", "drf_spectacular_sidecar"}
INSTALLED_APPS = [app for app in INSTALLED_APPS if app not in WEB_ONLY_APPS]
ROOT_URLCONF = "archive_site.worker_urls"
