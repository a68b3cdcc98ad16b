"""The task page's cross-source part: versions with the diff between them, and every source's
claims per GPU and baseline, filterable by source, GPU and version, ordered within a version.
Claims are listed, never ranked: the page's one ranking is by re-measured speedup."""
import difflib
from dataclasses import dataclass
from itertools import groupby

from .claim_selectors import claim_sources_and_gpus, task_claims, task_versions
from .leaderboard_query import MAX_TEXT, InvalidQuery
from .highlight import diff_html
from .models import Claim
from .ranking import excluded_reason
from .verdicts import kernel_badges

BASELINES = dict(Claim.Baseline.choices)
DEFAULT_BASELINE = Claim.Baseline.EAGER


@dataclass(frozen=True)
class ClaimsQuery:
    source: str = ""
    gpu: str = ""
    version: int | None = None
    baseline: str = DEFAULT_BASELINE


def parse_claims_query(params) -> ClaimsQuery:
    """source, gpu, version (a number) and baseline (one of Claim.Baseline) or InvalidQuery."""
    values = {}
    for name in ("source", "gpu"):
        value = (params.get(name) or "").strip()
        if len(value) > MAX_TEXT or "\x00" in value:
            raise InvalidQuery(f"{name} must be at most {MAX_TEXT} characters, without NUL")
        values[name] = value
    raw = (params.get("version") or "").strip()
    if raw and not (raw.isascii() and raw.isdigit() and len(raw) < 6):
        raise InvalidQuery(f"version must be a version number such as 1 or 2, not {raw[:40]!r}")
    baseline = (params.get("baseline") or DEFAULT_BASELINE).strip()
    if baseline not in BASELINES:
        raise InvalidQuery(f"baseline must be one of {', '.join(BASELINES)}, not {baseline[:40]!r}")
    return ClaimsQuery(source=values["source"], gpu=values["gpu"], version=int(raw) if raw else None,
                       baseline=baseline)


def task_sources_context(task, query: ClaimsQuery) -> dict:
    versions = task_versions(task)
    sources, gpus = claim_sources_and_gpus(task)
    claims = task_claims(task, baseline=query.baseline, source=query.source, gpu=query.gpu, version=query.version)
    field = Claim.speedup_field(query.baseline)
    for claim in claims:
        claim.ranked_speedup = getattr(claim, field)
        # A claim is listed, never ranked: a failed or suspected kernel's row says so and has no number.
        claim.excluded_reason = excluded_reason(claim.kernel)
        claim.badges = kernel_badges(verdict=claim.kernel.verdict, verdict_flags=claim.kernel.verdict_flags,
                                     claimed_correct=claim.claimed_correct, suspected=claim.kernel.suspected,
                                     screening_flags=claim.kernel.screening_flags)
    groups = [(version, list(rows)) for version, rows in groupby(claims, key=lambda claim: claim.task_version)]
    return {
        "claims_query": query, "baselines": BASELINES, "baseline_label": BASELINES[query.baseline],
        "versions": versions, "version_diffs": version_diffs(versions), "claim_sources": sources,
        "claim_gpus": gpus, "claim_groups": groups,
    }


def version_diffs(versions) -> list[dict]:
    """Each version whose code is stored, against the previous such version: what changed."""
    with_code = [version for version in versions if version.reference_code]
    diffs = []
    for old, new in zip(with_code, with_code[1:]):
        lines = list(difflib.unified_diff(old.reference_code.splitlines(), new.reference_code.splitlines(),
                                          fromfile=f"v{old.number}", tofile=f"v{new.number}", lineterm=""))
        diffs.append({"old": old, "new": new, "html": diff_html("\n".join(lines) + "\n") if lines else "",
                      "changed": sum(1 for line in lines if line[:1] in "+-" and line[:3] not in ("+++", "---"))})
    return diffs


def kernels_by_version(kernels: list, versions: list) -> list[dict]:
    """Ranked kernels split by task version (oldest first), each part in ranking order: the
    page ranks kernels within a version, never across."""
    by_id = {version.id: version for version in versions}
    groups: dict = {}
    for kernel in kernels:
        groups.setdefault(kernel.task_version_id, []).append(kernel)
    parts = sorted(((by_id.get(version_id), rows) for version_id, rows in groups.items()),
                   key=lambda part: part[0].number if part[0] else 0)
    return [{"version": version, "kernels": rows, "table_id": f"task-kernels-v{version.number if version else 0}"}
            for version, rows in parts]
