"""Huey jobs of the search app: they take ids and call a service."""
from huey.contrib.djhuey import db_task

from . import services


@db_task(retries=2, retry_delay=30)
def index_new_kernels(kernel_ids: list[int]) -> int:
    return services.search_index_add(kernel_ids=kernel_ids)


@db_task()
def rebuild_index() -> int:
    return services.search_index_rebuild()
