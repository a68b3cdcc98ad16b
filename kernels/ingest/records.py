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

    @property
    def code_sha256(self) -> str:
        return code_sha256(self.code)
