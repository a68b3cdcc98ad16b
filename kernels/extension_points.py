"""What other apps plug into, so that kernels (the base app) never imports them
(docs/architecture.md: dependencies point one way).

- `kernels_added`: a signal sent inside the import's transaction with the ids of the kernels it
  added (`kernel_ids`). search connects its index update in SearchConfig.ready; a host without
  the search app (archive_site/settings_gpu_worker.py) simply has no receiver.
- Kernel page panels: blocks another app adds to /kernels/<id>/. An app registers a
  KernelPanel from its AppConfig.ready; the page renders every registered panel of a slot
  where that slot is, in registration order (kernels/kernel_page.py, kernel_detail.html).
"""
from dataclasses import dataclass
from typing import Callable

from django.dispatch import Signal

kernels_added = Signal()  # kwargs: kernel_ids (list[int])

# Where a panel goes on the kernel page: "actions" under the kernel's title and badges,
# "after_source" under the kernel's source, "after_verifications" under the verification history.
PANEL_SLOTS = ("actions", "after_source", "after_verifications")


@dataclass(frozen=True)
class KernelPanel:
    name: str
    slot: str
    template: str
    # (kernel, page context so far) -> variables the template reads; None: none of its own.
    context: Callable[[object, dict], dict] | None = None


_panels: dict[str, KernelPanel] = {}


def register_kernel_panel(panel: KernelPanel) -> None:
    """Add (or replace, by name) a panel; called from an AppConfig.ready."""
    if panel.slot not in PANEL_SLOTS:
        raise ValueError(f"unknown kernel page slot {panel.slot!r}; expected one of {', '.join(PANEL_SLOTS)}")
    _panels[panel.name] = panel


def kernel_panels() -> list[KernelPanel]:
    return list(_panels.values())
