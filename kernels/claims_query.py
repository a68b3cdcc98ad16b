"""Which count's kernels the claims page lists (/claims/?outcome=failed&flag=stale_memory&source=...),
validated once. Every count on the page links here, so each number is one click from its kernels.

A scope parameter that is absent means "any"; present but empty means "not stated" (a claim
that names no GPU, a verification that recorded none), so every row of the table has a link.
"""
import re
from dataclasses import dataclass

from .leaderboard_query import MAX_TEXT, InvalidQuery

# What each count counts, in the words the page shows above its list.
OUTCOMES = {
    "all": "every kernel",
    "unverified": "not re-verified yet by a trusted run",
    "suspected": "not re-verified yet, and suspected by screening",
    "remeasured": "re-verified by a trusted run",
    "passed": "passed a trusted re-verification",
    "failed": "failed a trusted re-verification",
    "failed_without_flag": "failed a trusted re-verification without a blocking flag",
    "error": "a trusted re-verification that could not finish",
    "both": "passed, with a claimed and a re-measured speedup vs eager",
}
SCOPES = ("source", "claimed_gpu", "remeasured_gpu")
_FLAG_NAME = re.compile(r"^[a-z0-9_]{1,64}$")


@dataclass(frozen=True)
class ClaimsListQuery:
    outcome: str
    flag: str = ""
    source: str | None = None  # None: any source
    claimed_gpu: str | None = None
    remeasured_gpu: str | None = None
    page: int = 1


def parse_claims_list_query(params) -> ClaimsListQuery | None:
    """The list the reader asked for, None when the page shows no list, or InvalidQuery naming
    the parameter and what it accepts."""
    outcome = (params.get("outcome") or "").strip()
    if not outcome:
        return None
    if outcome not in OUTCOMES:
        raise InvalidQuery(f"outcome must be one of {', '.join(OUTCOMES)}, not {outcome[:40]!r}")
    flag = (params.get("flag") or "").strip()
    if flag and (outcome != "failed" or not _FLAG_NAME.match(flag)):
        raise InvalidQuery("flag must be a flag name (lower case, digits, _) and goes with outcome=failed")
    scope = {}
    for name in SCOPES:
        value = params.get(name)
        if value is not None and (len(value) > MAX_TEXT or "\x00" in value):
            raise InvalidQuery(f"{name} must be at most {MAX_TEXT} characters, without NUL")
        scope[name] = value
    raw_page = (params.get("page") or "1").strip()
    if not (raw_page.isascii() and raw_page.isdigit() and 0 < len(raw_page) < 7 and int(raw_page) > 0):
        raise InvalidQuery(f"page must be a positive integer, not {raw_page[:40]!r}")
    return ClaimsListQuery(outcome=outcome, flag=flag, page=int(raw_page), **scope)
