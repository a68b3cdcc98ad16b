"""Timing's findings about a task, read from its kernels' latest trusted verifications (no
writes): ``launch_bound`` (the eager reference's end-to-end time is mostly the host's
launches: trust the GPU-time figures) and ``large_headroom`` (torch.compile or a passing kernel
beats eager by more than 10x: the eager baseline is weak). They are about the baseline, not
about the task's check, so they are kept out of ``Task.flags`` (the weak-task findings)."""
from kernels.models import TRUSTED_ORIGINS, Verification

TIMING_TASK_FLAGS = {
    "launch_bound": "the eager reference's end-to-end time is mostly the host launching its ops: rank by GPU time",
    "large_headroom": "torch.compile or a passing kernel beats eager by more than 10x: the eager baseline is weak",
}


def is_timing_task_flag(name) -> bool:
    return name in TIMING_TASK_FLAGS


def task_timing_flags(*, task_id: int, limit: int = 200) -> list[dict]:
    """One entry per timing flag the task's recent trusted verifications raised: name, meaning,
    the evidence of the latest, and how many of them raised it."""
    runs = (Verification.objects.filter(kernel__task_id=task_id, origin__in=TRUSTED_ORIGINS,
                                        finished_at__isnull=False)
            .order_by("-finished_at").only("flags", "gpu_name")[:limit])
    found = {}
    for run in runs:
        for flag in run.flags or []:
            name = flag.get("name") if isinstance(flag, dict) else None
            if flag and flag.get("task_flag") and is_timing_task_flag(name):
                entry = found.setdefault(name, {"name": name, "meaning": TIMING_TASK_FLAGS[name],
                                                "evidence": str(flag.get("evidence") or ""),
                                                "gpu": run.gpu_name, "verifications": 0})
                entry["verifications"] += 1
    return [found[name] for name in TIMING_TASK_FLAGS if name in found]
