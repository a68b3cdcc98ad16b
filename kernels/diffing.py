"""Line diffs between two sources (difflib), unified and side by side, counted and highlighted.

Both views come from the same difflib opcodes. The side-by-side rows carry each line's HTML as
pygments wrote it for the whole source (so a comment or string spanning lines is coloured
right); pygments escapes every token, which is why those fragments may be marked safe.
"""
import difflib
from dataclasses import dataclass, field

from django.utils.safestring import SafeString, mark_safe
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import CudaLexer

from .highlight import diff_html

CONTEXT_LINES = 3


@dataclass(frozen=True)
class DiffCell:
    number: int | None  # line number in its source; None for the empty side of an added/removed line
    html: SafeString


@dataclass(frozen=True)
class DiffRow:
    kind: str  # "same", "changed", "added", "removed" or "skip" (unchanged lines left out)
    old: DiffCell | None = None
    new: DiffCell | None = None
    skipped: int = 0


@dataclass(frozen=True)
class CodeDiff:
    against: str  # what the diff compares with, e.g. "the task's best kernel"
    other_kernel_id: int | None  # None when the other side is not a kernel (the task's reference)
    added: int
    removed: int
    html: SafeString  # the unified diff; empty when the sources are identical
    rows: list[DiffRow] = field(default_factory=list)  # the side-by-side view
    old_label: str = ""
    new_label: str = ""

    @property
    def identical(self) -> bool:
        return not (self.added or self.removed)


def code_diff(*, old_code: str, new_code: str, old_label: str, new_label: str, against: str,
              other_kernel_id: int | None, old_lexer=None, new_lexer=None) -> CodeDiff:
    """Diff from `old_code` (the other side) to `new_code` (the kernel shown)."""
    old_lines, new_lines = old_code.splitlines(), new_code.splitlines()
    unified = list(difflib.unified_diff(old_lines, new_lines, fromfile=old_label, tofile=new_label,
                                        n=CONTEXT_LINES, lineterm=""))
    added = sum(1 for line in unified if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in unified if line.startswith("-") and not line.startswith("---"))
    html = diff_html("\n".join(unified) + "\n") if unified else SafeString("")
    rows = side_by_side(old_lines, new_lines, highlighted_lines(old_code, old_lexer or CudaLexer(stripnl=False)),
                        highlighted_lines(new_code, new_lexer or CudaLexer(stripnl=False))) if unified else []
    return CodeDiff(against=against, other_kernel_id=other_kernel_id, added=added, removed=removed, html=html,
                    rows=rows, old_label=old_label, new_label=new_label)


def highlighted_lines(code: str, lexer) -> list[SafeString]:
    """One HTML fragment per line of `code`, each with its spans closed (pygments closes and
    reopens a token's span at every newline)."""
    html = highlight(code, lexer, HtmlFormatter(nowrap=True))
    lines = html.split("\n")
    count = len(code.splitlines())
    lines = (lines + [""] * count)[:count]
    return [mark_safe(line) for line in lines]


def side_by_side(old_lines: list[str], new_lines: list[str], old_html: list[SafeString],
                 new_html: list[SafeString]) -> list[DiffRow]:
    """Rows of changes with CONTEXT_LINES around them; a replaced block pairs its lines."""
    rows: list[DiffRow] = []
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    shown_until = 0  # old-side line index up to which rows cover the source
    for group in matcher.get_grouped_opcodes(CONTEXT_LINES):
        first_old = group[0][1]
        if first_old > shown_until:
            rows.append(DiffRow(kind="skip", skipped=first_old - shown_until))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                rows += [DiffRow("same", _cell(old_html, i), _cell(new_html, j)) for i, j in zip(range(i1, i2), range(j1, j2))]
                continue
            old_side, new_side = list(range(i1, i2)), list(range(j1, j2))
            for k in range(max(len(old_side), len(new_side))):
                old = _cell(old_html, old_side[k]) if k < len(old_side) else None
                new = _cell(new_html, new_side[k]) if k < len(new_side) else None
                kind = "changed" if old and new else ("removed" if old else "added")
                rows.append(DiffRow(kind, old, new))
        shown_until = group[-1][2]
    if rows and shown_until < len(old_lines):
        rows.append(DiffRow(kind="skip", skipped=len(old_lines) - shown_until))
    return rows


def _cell(lines: list[SafeString], index: int) -> DiffCell:
    return DiffCell(number=index + 1, html=lines[index] if index < len(lines) else SafeString(""))
