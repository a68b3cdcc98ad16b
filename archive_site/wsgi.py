import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "archive_site.settings")
application = get_wsgi_application()

# The search model is loaded here, once per server process, not by the first search (search/warmup.py).
from search.warmup import warm_up  # noqa: E402

warm_up()
