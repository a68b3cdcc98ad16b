"""The limits set in a judge's process before it runs: no core files, CPU time, address space,
and death with its parent. The sandbox applies them as a child's ``preexec_fn``; the judge
server, in the judge it forks. Both import them from here (neither imports the other).

No Django imports: this file ships inside the verification bundle.
"""
from __future__ import annotations

import signal

try:
    import resource
except ImportError:  # not on Linux/macOS: limits are skipped, the timeout still holds
    resource = None

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing: no module only for annotations
if TYPE_CHECKING:
    from collections.abc import Callable


def die_with_parent() -> None:
    """Linux: the harness is killed when the process that started it dies (a worker killed
    mid-job must not leave an orphan holding the GPU while its job is re-run elsewhere)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the timeout still holds
        pass


def limits(cpu_seconds: float | None, address_space: int | None) -> Callable[[], None]:
    """A function that, called in the child, sets its limits (``preexec_fn``)."""
    def apply():
        die_with_parent()
        if resource is None:
            return
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if cpu_seconds:
            resource.setrlimit(resource.RLIMIT_CPU, (int(cpu_seconds), int(cpu_seconds) + 5))
        if address_space:
            resource.setrlimit(resource.RLIMIT_AS, (int(address_space), int(address_space)))
    return apply
