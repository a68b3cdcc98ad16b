"""Reads of the evaluator's pages that are not verifications (those are kernels.selectors')."""
from kernels.models import Profile
from kernels.selectors import of_published_kernels


def kernel_gpu_binary(kernel_id: int) -> Profile | None:
    """The kernel's GPU binary listing (what the worker's build ran), or None; None too while
    the kernel is an unpublished submission (the listing is its code, compiled)."""
    return (of_published_kernels(Profile.objects.filter(kernel_id=kernel_id, kind=Profile.Kind.GPU_BINARY))
            .order_by("-created_at", "-id").first())


def kernel_gpu_binary_of(kernel) -> Profile | None:
    """The same, from a kernel whose profiles were read with it (the kernel page's
    kernels.selectors.kernel_with_task): no query of its own."""
    listed = [p for p in kernel.profiles.all() if p.kind == Profile.Kind.GPU_BINARY]
    return max(listed, key=lambda p: (p.created_at, p.id)) if listed else None
