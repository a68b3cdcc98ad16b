"""Reads for code search: the kernels whose code contains exact text or matches a regular
expression, found through the code index (search/code_index.py), never by reading every row.

Exact text is counted in SQL (case-sensitive on both databases), so any number of matches can be
sorted and paged there. A regular expression runs in this process on the kernels the index
returns, at most MAX_REGEX_CANDIDATES of them and for at most REGEX_BUDGET_S in all, each under
the pattern's own timeout (search/code_query.py): the answer says when it stopped early.
"""
import time
from dataclasses import dataclass, field

from django.db import connection
from django.db.models import ExpressionWrapper, IntegerField, Value
from django.db.models.functions import Length, Replace

from .code_index import kernels_containing
from .code_query import CodePattern, PatternTimeout

MAX_REGEX_CANDIDATES = 5000
REGEX_BUDGET_S = 3.0
_CHUNK = 200


@dataclass
class RegexMatches:
    counts: dict[int, int]  # kernel id -> matches in its code
    examined: int
    stopped_early: bool = False
    timed_out: list[int] = field(default_factory=list)  # kernels the pattern ran too long on

    @property
    def notice(self) -> str:
        parts = []
        if self.stopped_early:
            parts.append(f"the regular expression was tried on the first {self.examined:,} kernels the index "
                         "proposed only; add literal text to narrow it")
        if self.timed_out:
            parts.append(f"it ran past its time limit on {len(self.timed_out)} kernel(s), left out")
        return "; ".join(parts).capitalize() + ("." if parts else "")


def exact_matches(pattern: CodePattern, kernels):
    """`kernels` (a queryset) narrowed to those whose code contains the text, annotated with
    `code_matches`, the number of times it occurs."""
    found = kernels_containing(kernels, pattern.required, case_insensitive=False, connection=connection)
    text = Value(pattern.text)
    occurrences = (Length("code") - Length(Replace("code", text, Value("")))) / len(pattern.text)
    return found.annotate(code_matches=_as_int(occurrences)).filter(code_matches__gt=0)


def regex_matches(pattern: CodePattern, kernels) -> RegexMatches:
    """Ids of the kernels of `kernels` whose code matches the regular expression, with counts."""
    found = kernels_containing(kernels, pattern.required, case_insensitive=pattern.case_insensitive,
                               connection=connection)
    rows = found.order_by("id").values_list("id", "code")
    result = RegexMatches(counts={}, examined=0)
    started = time.monotonic()
    last_id = 0
    while True:  # keyset chunks: a broad pattern never loads every candidate's code at once
        chunk = list(rows.filter(id__gt=last_id)[:_CHUNK])
        if not chunk:
            return result
        for kernel_id, code in chunk:
            if result.examined >= MAX_REGEX_CANDIDATES or time.monotonic() - started > REGEX_BUDGET_S:
                result.stopped_early = True
                return result
            result.examined += 1
            try:
                count = pattern.count(code)
            except PatternTimeout:
                result.timed_out.append(kernel_id)
                continue
            if count:
                result.counts[kernel_id] = count
        last_id = chunk[-1][0]


def _as_int(expression):
    return ExpressionWrapper(expression, output_field=IntegerField())
