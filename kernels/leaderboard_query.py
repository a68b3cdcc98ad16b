"""Query parameters of the leaderboard and kernel lists, validated once for pages and API.

The original AI CUDA Engineer Archive site linked to its leaderboard with `level`,
`sort_by`, `show_kernels` and `experiment`; those spellings are accepted here so old
links keep working (see docs/pages.md).
"""
import re
from dataclasses import dataclass

from web import booleans

from .techniques import TECHNIQUES

# Sort keys: speedups descending (best first), runtime ascending, task in archive order.
SORTS = {
    "best": "re-measured speedup where there is one, else claimed",
    "speedup_native": "claimed speedup vs eager (torch)",
    "speedup_compile": "speedup vs torch.compile",
    "runtime": "claimed kernel runtime (ms)",
    "remeasured_speedup": "re-measured speedup vs eager (verified kernels)",
    "task": "level and task",
}
# Re-measured numbers outrank claims (kernels/ranking.py).
DEFAULT_SORT = "best"
# Sorts whose rank numbers are re-measured ranks: rows with a claim only are listed after, unnumbered.
REMEASURED_SORTS = ("best", "remeasured_speedup")
# include=all: failed and suspected kernels are ranked too (they are left out by default).
INCLUDE_VALUES = {"": False, "ranked": False, "trusted": False, "default": False, "all": True}
# Spellings of other sites and of the archive's own columns, normalised (lowercase, no
# separators) to our sort keys.
_SORT_ALIASES = {
    "speedup": "speedup_native", "speedupnative": "speedup_native", "nativespeedup": "speedup_native",
    "cudaspeedupnative": "speedup_native", "speedupeager": "speedup_native",
    "speedupcompile": "speedup_compile", "compilespeedup": "speedup_compile",
    "cudaspeedupcompile": "speedup_compile",
    "runtime": "runtime", "cudaruntime": "runtime", "runtimems": "runtime",
    "remeasuredspeedup": "remeasured_speedup", "remeasured": "remeasured_speedup",
    "verifiedspeedup": "remeasured_speedup",
    "task": "task", "taskid": "task", "level": "task", "leveltask": "task",
    "best": "best", "trusted": "best",
}
_LEVEL = re.compile(r"^(?:level[_ ]?)?(\d{1,3})$", re.I)
MAX_TEXT = 200
MAX_PAGE_SIZE = 200


class InvalidQuery(ValueError):
    """A query parameter that cannot be understood; the message names it and what is allowed."""


@dataclass(frozen=True)
class LeaderboardQuery:
    level: int | None = None
    correct_only: bool = False
    verified_only: bool = False
    hardware: str = ""
    op_name: str = ""
    technique: str = ""
    experiment: str = ""
    sort: str = DEFAULT_SORT
    show_kernels: bool = False
    include_all: bool = False
    page: int = 1
    page_size: int = 50


def parse_leaderboard_query(params, *, default_page_size: int = 50) -> LeaderboardQuery:
    """Read a QueryDict (or any mapping of str to str) into a LeaderboardQuery or raise InvalidQuery."""
    values = {
        "level": _level(params.get("level", "")),
        "correct_only": _flag(params, "correct_only", "correct"),
        "verified_only": _flag(params, "verified_only", "verified"),
        "hardware": _text(params, "hardware"),
        "op_name": _text(params, "op_name") or _text(params, "q"),
        "technique": _technique(params.get("technique", "")),
        "experiment": _text(params, "experiment"),
        "sort": _sort(params.get("sort") or params.get("sort_by") or ""),
        "show_kernels": _flag(params, "show_kernels"),
        "include_all": _include(params.get("include", "")),
        "page": _positive_int(params, "page", 1),
        "page_size": min(_positive_int(params, "page_size", default_page_size), MAX_PAGE_SIZE),
    }
    return LeaderboardQuery(**values)


def _level(raw: str) -> int | None:
    raw = raw.strip()
    if not raw or raw.lower() == "all":
        return None
    match = _LEVEL.match(raw)
    if not match or int(match.group(1)) < 1:
        raise InvalidQuery(f"level must be a level number such as 1, 2 or 3 (or level_1, level_2, ...), not {raw[:40]!r}")
    return int(match.group(1))


def _flag(params, *names: str) -> bool:
    for name in names:
        raw = params.get(name)
        if raw is None:
            continue
        value = booleans.parse(raw)
        if value is not None:
            return value
        raise InvalidQuery(f"{name} must be 1 or 0 (true/false), not {raw[:40]!r}")
    return False


def _include(raw: str) -> bool:
    value = raw.strip().lower()
    if value not in INCLUDE_VALUES:
        raise InvalidQuery(f"include must be 'all' (failed and suspected kernels ranked too) or empty, not {raw[:40]!r}")
    return INCLUDE_VALUES[value]


def _text(params, name: str) -> str:
    value = (params.get(name) or "").strip()
    if len(value) > MAX_TEXT:
        raise InvalidQuery(f"{name} is longer than {MAX_TEXT} characters")
    if "\x00" in value:  # PostgreSQL refuses NUL in any text it is sent
        raise InvalidQuery(f"{name} must not contain a NUL character")
    return value


def _technique(raw: str) -> str:
    raw = raw.strip()
    if raw and raw not in TECHNIQUES:
        raise InvalidQuery(f"technique must be one of {', '.join(TECHNIQUES)}, not {raw[:40]!r}")
    return raw


def _sort(raw: str) -> str:
    if not raw.strip():
        return DEFAULT_SORT
    key = re.sub(r"[^a-z]", "", raw.lower())
    if raw in SORTS:
        return raw
    if key in _SORT_ALIASES:
        return _SORT_ALIASES[key]
    raise InvalidQuery(f"sort must be one of {', '.join(SORTS)}, not {raw[:40]!r}")


def _positive_int(params, name: str, default: int) -> int:
    raw = (params.get(name) or "").strip()
    if not raw:
        return default
    # isascii: str.isdigit() also accepts digits such as '²' that int() refuses.
    if not (raw.isascii() and raw.isdigit()) or int(raw) < 1 or len(raw) > 9:
        raise InvalidQuery(f"{name} must be a positive whole number, not {raw[:40]!r}")
    return int(raw)
