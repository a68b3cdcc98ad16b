"""A kernel as a search result: what it is, how fast it claims and was re-measured to be, where
it matched. Shared by semantic search, code search and related kernels."""
from dataclasses import dataclass, field

from kernels.models import Kernel
from kernels.techniques import decode_tags, label

from .code_query import SnippetLine

# Columns a hit shows (never the code: the code is read only for the snippets of a page's hits).
HIT_FIELDS = (
    "id", "name", "code_sha256", "claimed_speedup_native", "claimed_correct", "claimed_runtime_ms", "technique_tags",
    "hardware", "verified", "verdict", "verdict_flags", "suspected", "screening_flags", "remeasured_speedup_eager",
    "remeasured_runtime_ms", "remeasured_gpu", "task__id", "task__level", "task__task_number", "task__op_name",
    "task__flags",
)


@dataclass
class KernelHit:
    kernel_id: int
    name: str
    task: str
    level: int
    task_number: int
    similarity: float | None
    speedup: float | None  # claimed vs eager; None for kernels the archive marks incorrect (it writes 0)
    correct: bool
    techniques: list[str] = field(default_factory=list)
    duplicates_folded: int = 0
    runtime_ms: float | None = None  # claimed
    hardware: str = ""  # the GPU the claims were measured on
    verified: bool = False
    verdict: str = ""  # latest trusted verification: "", passed, failed, error
    remeasured_speedup: float | None = None
    remeasured_runtime_ms: float | None = None
    remeasured_gpu: str = ""
    matched_lines: int = 0  # code search: lines of the kernel that match
    snippets: list[SnippetLine] = field(default_factory=list)
    kernel: Kernel | None = field(default=None, repr=False)  # for the page's verdict badges

    @property
    def more_lines(self) -> int:
        return max(0, self.matched_lines - len(self.snippets))

    @property
    def technique_labels(self) -> list[str]:
        return [label(tag) for tag in self.techniques]

    def as_dict(self) -> dict:
        data = {name: getattr(self, name) for name in self.__dataclass_fields__ if name not in ("kernel", "snippets")}
        return data | {"technique_labels": self.technique_labels,
                       "snippets": [snippet.as_dict() for snippet in self.snippets]}


def hit_from_kernel(kernel: Kernel, *, similarity: float | None = None) -> KernelHit:
    task = kernel.task
    claimed = kernel.claimed_speedup_native if kernel.claimed_correct else None
    return KernelHit(
        kernel_id=kernel.id, name=kernel.name, task=str(task), level=task.level, task_number=task.task_number,
        similarity=None if similarity is None else round(similarity, 4), speedup=claimed,
        correct=kernel.claimed_correct, techniques=decode_tags(kernel.technique_tags),
        runtime_ms=kernel.claimed_runtime_ms if kernel.claimed_correct else None, hardware=kernel.hardware,
        verified=kernel.verified, verdict=kernel.verdict,
        remeasured_speedup=kernel.remeasured_speedup_eager if kernel.verified else None,
        remeasured_runtime_ms=kernel.remeasured_runtime_ms if kernel.verified else None,
        remeasured_gpu=kernel.remeasured_gpu, kernel=kernel,
    )
