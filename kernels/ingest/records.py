"""Validated, database-free records that services.py writes."""
import hashlib
from dataclasses import dataclass, field


def code_sha256(code: str) -> str:
    return hashlib.sha256(code.encode("utf-8")).hexdigest()


@dataclass
class ProfileRecord:
    kind: str  # "ncu", "torch" or "clang_tidy"
    raw_text: str
    parsed: dict


@dataclass
class KernelRecord:
    # Task identity and content.
    level: int
    task_number: int
    op_name: str
    reference_code: str
    functional_code: str
    # The kernel.
    name: str
    kind: str  # "cuda_forward" or "model_new"
    code: str
    experiment: str = ""
    archive_index: int | None = None
    claimed_runtime_ms: float | None = None
    claimed_native_runtime_ms: float | None = None
    claimed_compile_runtime_ms: float | None = None
    claimed_speedup_native: float | None = None
    claimed_speedup_compile: float | None = None
    claimed_correct: bool = False
    claimed_max_diff: float | None = None
    error_text: str = ""
    hardware: str = ""
    profiles: list[ProfileRecord] = field(default_factory=list)
    # Speedups against baselines other than eager and torch.compile, keyed by Claim.Baseline
    # value (CUDA-L1: torch_compile_reduce_overhead, cuda_graph, cudnn).
    extra_speedups: dict[str, float | None] = field(default_factory=dict)
    # The baselines' own code where the source publishes it ({"cuda_graph": ..., "cudnn": ...}).
    baseline_code: dict[str, str] = field(default_factory=dict)
    # The code's sha256 (dedupe key), computed once when the record is made.
    code_sha256: str = field(init=False)

    def speedups(self) -> dict[str, float | None]:
        """Every claimed speedup by baseline (Claim.Baseline values)."""
        return {"eager": self.claimed_speedup_native, "torch_compile": self.claimed_speedup_compile,
                **self.extra_speedups}

    def __post_init__(self):
        self.code_sha256 = code_sha256(self.code)
