"""Line diffs between two kernels' sources (difflib), counted and ready to highlight."""
import difflib
from dataclasses import dataclass

from django.utils.safestring import SafeString

from .highlight import diff_html

CONTEXT_LINES = 3


@dataclass(frozen=True)
class CodeDiff:
    against: str  # what the diff compares with, e.g. "the task's best kernel"
    other_kernel_id: int
    added: int
    removed: int
    html: SafeString  # empty when the sources are identical

    @property
    def identical(self) -> bool:
        return not (self.added or self.removed)


def code_diff(*, old_code: str, new_code: str, old_label: str, new_label: str, against: str,
              other_kernel_id: int) -> CodeDiff:
    """Unified diff from `old_code` (the other kernel) to `new_code` (the kernel shown)."""
    lines = list(difflib.unified_diff(
        old_code.splitlines(), new_code.splitlines(), fromfile=old_label, tofile=new_label,
        n=CONTEXT_LINES, lineterm="",
    ))
    added = sum(1 for line in lines if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in lines if line.startswith("-") and not line.startswith("---"))
    html = diff_html("\n".join(lines) + "\n") if lines else SafeString("")
    return CodeDiff(against=against, other_kernel_id=other_kernel_id, added=added, removed=removed, html=html)
