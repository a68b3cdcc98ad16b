"""Everything the kernel page shows, assembled from a handful of reads (no per-row queries).

Blocks of other apps (related kernels from search, the re-verify form from evaluator) come in
as panels registered in kernels/extension_points.py; this module never imports those apps."""
from . import selectors
from .achieved_rate_selectors import verification_achieved_rates
from .achieved_rates import baseline_absence, compile_shared_note
from .build_log import first_build_error
from .charts import speed_of_light
from .comparison import code_comparison, preferred_profile, profile_comparison, task_kernel_menu
from .extension_points import PANEL_SLOTS, kernel_panels
from .highlight import kernel_source_html, python_source_html
from .models import Profile
from .profile_display import clang_tidy_groups, ncu_launch, ncu_metric_values, ncu_sections, torch_profile_rows
from .ranking import excluded_reason
from .verification_views import kernel_findings, latest_trusted, verifications_by_gpu

PROFILE_ORDER = {Profile.Kind.NCU: 0, Profile.Kind.TORCH: 1, Profile.Kind.CLANG_TIDY: 2}


def kernel_page_context(kernel_id: int, params=None) -> dict:
    """`params`: the page's query (kernels/comparison.py reads what to compare with)."""
    params = params or {}
    kernel = selectors.kernel_with_task(kernel_id)
    verifications = list(selectors.kernel_verifications(kernel.id))
    for verification in verifications:  # full rows are loaded already: no query per run
        verification.achieved = verification_achieved_rates(verification)
        verification.compile_absence = baseline_absence(verification.timings, "compile")
        verification.compile_shared = compile_shared_note(verification.timings)
    # Best by kernels/ranking.py: never a failed or suspected kernel; "claimed" when no kernel
    # of the task has passed a trusted verification.
    best = selectors.best_kernel_of_task(kernel.task_id)
    # The GPU binary listing has a panel of its own (evaluator's, under the source), which reads it
    # from this same prefetch.
    profiles = sorted((p for p in kernel.profiles.all() if p.kind != Profile.Kind.GPU_BINARY),
                      key=lambda p: (PROFILE_ORDER.get(p.kind, 9), p.origin))
    profile_views = [_profile_view(p) for p in profiles]
    menu = task_kernel_menu(kernel)
    ncu_profiles = [p for p in profiles if p.kind == Profile.Kind.NCU]
    if ncu_profiles:  # the comparison sits under the profile it compares: ours, else the archive's
        compared = preferred_profile(ncu_profiles)
        next(view for view in profile_views if view["profile"] is compared)["compare_here"] = True
    page = {
        "kernel": kernel,
        "task": kernel.task,
        "source_html": kernel_source_html(kernel),
        "reference_html": python_source_html(kernel.task.reference_code),
        "best_kernel": best,
        "comparison": code_comparison(kernel, best, params, menu),
        "build_error": first_build_error(kernel.error_text, kernel.code),
        "profiles": profile_views,
        # plotly is about 1 MB before gzip: the page loads it only when a profile has a chart.
        "draws_charts": any(view.get("chart") for view in profile_views),
        "ncu_comparison": profile_comparison(kernel, ncu_profiles, params, menu),
        "verifications": verifications,
        "verifications_by_gpu": verifications_by_gpu(verifications),
        "findings": kernel_findings(kernel, latest_trusted(verifications, kernel)),
        "excluded_reason": excluded_reason(kernel),
        "verified": kernel.verified,
        # The run the kernel's verified state comes from, and a run still in progress.
        "latest_verification": next((v for v in verifications if v.id == kernel.latest_verification_id), None),
        "open_verification": next((v for v in verifications if v.status in ("queued", "running")), None),
    }
    page["panels"] = {slot: [] for slot in PANEL_SLOTS}
    for panel in kernel_panels():
        if panel.context is not None:
            page.update(panel.context(kernel, page))
        page["panels"][panel.slot].append(panel.template)
    return page


def _profile_view(profile: Profile) -> dict:
    parsed = profile.parsed if isinstance(profile.parsed, dict) else {}
    view = {"profile": profile, "kind": profile.kind, "chart_id": f"chart-{profile.kind}-{profile.origin}"}
    if profile.kind == Profile.Kind.NCU:
        view["sections"] = ncu_sections(parsed)
        view["launch"] = ncu_launch(parsed, profile.raw_text)
        view["chart"] = speed_of_light(ncu_metric_values(parsed))
    elif profile.kind == Profile.Kind.TORCH:
        view["headings"], view["rows"] = torch_profile_rows(parsed)
    elif profile.kind == Profile.Kind.CLANG_TIDY:
        view.update(clang_tidy_groups(parsed))
    return view
