"""Parser for clang-tidy's diagnostics, to group an archive kernel's warnings by check.

The archive's Clang_Tidy column is ``{'stdout', 'stderr', 'errored'}``; the diagnostics
are in ``stdout`` as ``FILE:LINE:COL: SEVERITY: MESSAGE [CHECK]`` followed by the quoted
source line and caret lines, which are skipped.
"""
from __future__ import annotations

import re

_DIAGNOSTIC = re.compile(
    r"^(?P<file>.+?):(?P<line>\d+):(?P<column>\d+): "
    r"(?P<severity>warning|error|note|remark|fatal error): "
    r"(?P<message>.*?)(?: \[(?P<check>[^\[\]]+)\])?\s*$"
)


def parse_clang_tidy_output(stdout: str, *, include_notes: bool = False) -> list[dict]:
    """Diagnostics as dicts with file, line, column, severity, message, check (None if absent).

    Notes ("the first parameter in the range is 'A'") elaborate on the diagnostic before
    them and carry no check name; they are left out unless ``include_notes``.
    """
    if not isinstance(stdout, str):
        raise ValueError(f"clang-tidy output: expected text, got {type(stdout).__name__}")
    diagnostics = []
    for text_line in stdout.splitlines():
        match = _DIAGNOSTIC.match(text_line)
        if not match or (match["severity"] == "note" and not include_notes):
            continue
        diagnostics.append(
            {
                "file": match["file"],
                "line": int(match["line"]),
                "column": int(match["column"]),
                "severity": match["severity"],
                "message": match["message"],
                "check": match["check"],
            }
        )
    return diagnostics


def count_by_check(diagnostics: list[dict]) -> dict[str, int]:
    """How many diagnostics each check raised, most frequent first (ties by name)."""
    counts: dict[str, int] = {}
    for diagnostic in diagnostics:
        check = diagnostic["check"] or "(no check)"
        counts[check] = counts.get(check, 0) + 1
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))
