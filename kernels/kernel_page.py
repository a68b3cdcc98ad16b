"""Everything the kernel page shows, assembled from a handful of reads (no per-row queries)."""
from search.selectors import related_kernels

from . import selectors
from .charts import speed_of_light
from .diffing import code_diff
from .highlight import kernel_source_html, python_source_html
from .models import Profile
from .ranking import excluded_reason
from .verification_views import kernel_findings, latest_trusted, verifications_by_gpu
from .profile_tables import clang_tidy_groups, ncu_metric_values, ncu_sections, torch_profile_rows

PROFILE_ORDER = {Profile.Kind.NCU: 0, Profile.Kind.TORCH: 1, Profile.Kind.CLANG_TIDY: 2}


def kernel_page_context(kernel_id: int) -> dict:
    kernel = selectors.kernel_with_task(kernel_id)
    verifications = list(selectors.kernel_verifications(kernel.id))
    # Best by kernels/ranking.py: never a failed or suspected kernel; "claimed" when no kernel
    # of the task has passed a trusted verification.
    best = selectors.best_kernel_of_task(kernel.task_id)
    diffs = []
    if best is not None and best.id != kernel.id:
        diffs.append(code_diff(old_code=best.code, new_code=kernel.code, old_label=f"best kernel #{best.id}",
                               new_label=f"this kernel #{kernel.id}",
                               against=f"the task's best kernel ({best.basis})", other_kernel_id=best.id))
    if kernel.parent is not None:
        diffs.append(code_diff(old_code=kernel.parent.code, new_code=kernel.code,
                               old_label=f"parent #{kernel.parent.id}", new_label=f"this kernel #{kernel.id}",
                               against="its parent", other_kernel_id=kernel.parent.id))
    return {
        "kernel": kernel,
        "task": kernel.task,
        "source_html": kernel_source_html(kernel),
        "reference_html": python_source_html(kernel.task.reference_code),
        "best_kernel": best,
        "diffs": diffs,
        "profiles": [_profile_view(p) for p in sorted(kernel.profiles.all(),
                                                      key=lambda p: (PROFILE_ORDER.get(p.kind, 9), p.origin))],
        "verifications": verifications,
        "verifications_by_gpu": verifications_by_gpu(verifications),
        "findings": kernel_findings(kernel, latest_trusted(verifications, kernel)),
        "excluded_reason": excluded_reason(kernel),
        "related": related_kernels(kernel.id),
        "verified": kernel.verified,
        # The run the kernel's verified state comes from, and a run still in progress.
        "latest_verification": next((v for v in verifications if v.id == kernel.latest_verification_id), None),
        "open_verification": next((v for v in verifications if v.status in ("queued", "running")), None),
    }


def _profile_view(profile: Profile) -> dict:
    parsed = profile.parsed if isinstance(profile.parsed, dict) else {}
    view = {"profile": profile, "kind": profile.kind, "chart_id": f"chart-{profile.kind}-{profile.origin}"}
    if profile.kind == Profile.Kind.NCU:
        view["sections"] = ncu_sections(parsed)
        view["chart"] = speed_of_light(ncu_metric_values(parsed))
    elif profile.kind == Profile.Kind.TORCH:
        view["headings"], view["rows"] = torch_profile_rows(parsed)
    elif profile.kind == Profile.Kind.CLANG_TIDY:
        view.update(clang_tidy_groups(parsed))
    return view
