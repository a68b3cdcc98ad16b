"""Reads for the home page's headline numbers of trust: how many claims were re-measured, how
many kernels failed and why, which cheats were caught, what screening suspects, and the
claimed-vs-re-measured points. Two grouped queries and one list, cached like the overview."""
from django.core.cache import cache
from django.db.models import Count, Q
from django.urls import reverse

from .models import Kernel
from .page_cache import TRUST_CACHE_KEY
from .verdicts import decode_names, failure_kind, flag_kind

TRUST_CACHE_SECONDS = 60
MAX_SCATTER_POINTS = 5000


def trust_overview() -> dict:
    return cache.get_or_set(TRUST_CACHE_KEY, _trust_overview, TRUST_CACHE_SECONDS)


def _trust_overview() -> dict:
    # Names differ from the fields they count: an aggregate may not shadow a field.
    totals = Kernel.objects.aggregate(
        n_kernels=Count("id"), n_claimed_correct=Count("id", filter=Q(claimed_correct=True)),
        n_remeasured=Count("id", filter=~Q(verdict="")), n_passed=Count("id", filter=Q(verdict="passed")),
        n_failed=Count("id", filter=Q(verdict="failed")), n_errors=Count("id", filter=Q(verdict="error")),
        n_claimed_correct_failed=Count("id", filter=Q(verdict="failed", claimed_correct=True)),
        n_suspected=Count("id", filter=Q(suspected=True)),
        n_suspected_unverified=Count("id", filter=Q(suspected=True, verdict="")),
    )
    why = {"cheat": 0, "library": 0, "wrong": 0}
    flags: dict[str, dict] = {}
    failed = Kernel.objects.filter(verdict="failed").order_by().values_list("verdict_flags").annotate(n=Count("id"))
    for encoded, count in failed:
        names = decode_names(encoded)
        why[failure_kind("failed", names) or "wrong"] += count
        for name in names:
            entry = flags.setdefault(name, {"name": name, "kind": flag_kind(name), "kernels": 0})
            entry["kernels"] += count
    suspicions: dict[str, int] = {}
    for screening in Kernel.objects.filter(suspected=True).values_list("screening_flags", flat=True):
        for flag in screening or []:
            if isinstance(flag, dict) and flag.get("name"):
                suspicions[flag["name"]] = suspicions.get(flag["name"], 0) + 1
    order = {"cheat": 0, "library": 1, "wrong": 2}
    return {
        **{name[2:]: value for name, value in totals.items()}, "why": why,
        "flags": sorted(flags.values(), key=lambda f: (order.get(f["kind"], 3), -f["kernels"], f["name"])),
        "suspicions": sorted(suspicions.items(), key=lambda item: (-item[1], item[0])),
    }


def claimed_vs_remeasured_points() -> list[dict]:
    """Every verified kernel with both speedups, for the scatter (archive text escaped by the chart)."""
    rows = (Kernel.objects.filter(verified=True, remeasured_speedup_eager__gt=0, claimed_speedup_native__gt=0)
            .order_by("id").values_list("id", "name", "claimed_speedup_native", "remeasured_speedup_eager",
                                        "hardware", "remeasured_gpu")[:MAX_SCATTER_POINTS])
    return [{"name": name, "claimed": claimed, "remeasured": remeasured, "claimed_gpu": hardware,
             "remeasured_gpu": gpu, "url": reverse("kernel_detail", args=[kernel_id])}
            for kernel_id, name, claimed, remeasured, hardware, gpu in rows]
