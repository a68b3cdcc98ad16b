"""A code search pattern as typed by a user: exact text or a regular expression. No ORM.

A pattern is turned into (1) the literals any matching code must contain, which the code
index (search/code_index.py) looks up, and (2) a matcher that finds the matching lines of a
kernel, run only on the kernels the index returned.

A user's regular expression must not be able to hang a web process: patterns are at most
MAX_PATTERN_LENGTH characters with repeat counts of at most MAX_REPEAT, and they run under the
`regex` module with a timeout per kernel (Python's `re` has none), so a catastrophic pattern
costs at most REGEX_TIMEOUT_S per kernel and the search stops at a total budget (code_search.py).
"""
import re
from dataclasses import dataclass, field
from re import _constants as sre  # the parser behind `re` (Python 3.11; sre_parse is its deprecated alias)
from re import _parser as sre_parse

import regex

# Trigram indexes (FTS5's trigram tokenizer, pg_trgm) can only look up runs of 3 characters.
MIN_LITERAL = 3
MAX_PATTERN_LENGTH = 300
MAX_REPEAT = 1000
REGEX_TIMEOUT_S = 0.2
SNIPPET_LINES = 3
SNIPPET_MAX_CHARS = 240
_REPEAT_COUNT = re.compile(r"\{\s*(\d+)\s*(?:,\s*(\d*)\s*)?\}")
_INLINE_IGNORECASE = re.compile(r"\(\?[a-zA-Z]*i[a-zA-Z-]*[:)]")


class InvalidPattern(ValueError):
    """A pattern that cannot be searched; the message says why in the user's terms."""


class PatternTimeout(Exception):
    """The regular expression ran past its time limit on one kernel."""


@dataclass(frozen=True)
class LinePart:
    text: str
    matched: bool


@dataclass
class SnippetLine:
    number: int
    parts: list[LinePart]

    @property
    def text(self) -> str:
        return "".join(part.text for part in self.parts)

    def as_dict(self) -> dict:
        ranges, offset = [], 0
        for part in self.parts:
            if part.matched:
                ranges.append([offset, offset + len(part.text)])
            offset += len(part.text)
        return {"line": self.number, "text": self.text, "matches": ranges}


@dataclass
class CodePattern:
    """What the user asked for, the literals the index must find, and the matcher."""
    text: str
    is_regex: bool
    # Clauses ANDed together; each clause is a set of alternatives (any one must be in the code).
    required: list[frozenset[str]] = field(default_factory=list)
    case_insensitive: bool = False
    compiled: regex.Pattern | None = None

    def _spans(self, line: str) -> list[tuple[int, int]]:
        if not self.is_regex:
            spans, start = [], line.find(self.text)
            while start != -1:
                spans.append((start, start + len(self.text)))
                start = line.find(self.text, start + len(self.text))
            return spans
        try:
            return [m.span() for m in self.compiled.finditer(line, timeout=REGEX_TIMEOUT_S) if m.end() > m.start()]
        except TimeoutError:
            raise PatternTimeout(self.text) from None

    def count(self, code: str) -> int:
        """How many matches the code holds (0: none). Raises PatternTimeout."""
        if not self.is_regex:
            return code.count(self.text)
        try:
            return sum(1 for m in self.compiled.finditer(code, timeout=REGEX_TIMEOUT_S) if m.end() > m.start())
        except TimeoutError:
            raise PatternTimeout(self.text) from None

    def snippets(self, code: str, limit: int = SNIPPET_LINES) -> tuple[list[SnippetLine], int]:
        """The first `limit` matching lines (numbered from 1, cut to SNIPPET_MAX_CHARS around the
        first match) and how many lines match in all."""
        lines, total = [], 0
        for number, line in enumerate(code.splitlines(), start=1):
            try:
                spans = self._spans(line)
            except PatternTimeout:
                break
            if not spans:
                continue
            total += 1
            if len(lines) < limit:
                lines.append(SnippetLine(number, split_line(line, spans)))
        return lines, total


def split_line(line: str, spans: list[tuple[int, int]]) -> list[LinePart]:
    """The line as plain and matched parts (escaped later, by the template or the JSON encoder),
    trimmed to SNIPPET_MAX_CHARS around the first match."""
    start = 0
    if len(line) > SNIPPET_MAX_CHARS:
        start = max(0, min(spans[0][0] - 40, len(line) - SNIPPET_MAX_CHARS))
    end = start + SNIPPET_MAX_CHARS
    parts, position = [], start
    for span_start, span_end in spans:
        span_start, span_end = max(span_start, start), min(span_end, end)
        if span_start >= span_end:
            continue
        if span_start > position:
            parts.append(LinePart(line[position:span_start], False))
        parts.append(LinePart(line[span_start:span_end], True))
        position = span_end
    if position < min(len(line), end):
        parts.append(LinePart(line[position:end], False))
    if start > 0:
        parts.insert(0, LinePart("…", False))
    if end < len(line):
        parts.append(LinePart("…", False))
    return parts


def exact_pattern(text: str) -> CodePattern:
    """Code containing `text` exactly (case-sensitive), e.g. an identifier such as __shfl_xor_sync."""
    _check_length(text)
    if "\n" in text.strip("\n"):
        raise InvalidPattern("exact code search looks for one line of code; paste several lines to search by meaning")
    text = text.strip("\n")
    if len(text) < MIN_LITERAL:
        raise InvalidPattern(f"search code for at least {MIN_LITERAL} characters")
    return CodePattern(text=text, is_regex=False, required=[frozenset([text])])


def regex_pattern(text: str) -> CodePattern:
    """Code matching a regular expression (Python syntax), which must contain a literal run of at
    least MIN_LITERAL characters that the index can look up."""
    _check_length(text)
    for match in _REPEAT_COUNT.finditer(text):
        if any(group and int(group) > MAX_REPEAT for group in match.groups()):
            raise InvalidPattern(f"repeat counts above {MAX_REPEAT} are not allowed ({match.group(0)})")
    try:
        compiled = regex.compile(text, flags=regex.VERSION0 | regex.MULTILINE)
        parsed = sre_parse.parse(text)
    except (regex.error, re.error, OverflowError, RecursionError) as problem:
        raise InvalidPattern(f"not a valid regular expression: {problem}") from None
    case_insensitive = bool(compiled.flags & regex.IGNORECASE) or bool(_INLINE_IGNORECASE.search(text))
    required = _required_literals(list(parsed))
    if not required:
        raise InvalidPattern(f"a regular expression needs a plain run of at least {MIN_LITERAL} characters "
                             r"the code must contain (e.g. __shfl_\w+_sync), so the index can narrow the search")
    return CodePattern(text=text, is_regex=True, required=required, case_insensitive=case_insensitive,
                       compiled=compiled)


def _check_length(text: str) -> None:
    if len(text) > MAX_PATTERN_LENGTH:
        raise InvalidPattern(f"code searches are at most {MAX_PATTERN_LENGTH} characters")
    if "\x00" in text:
        raise InvalidPattern("a code search must not contain a NUL character")


def _required_literals(items) -> list[frozenset[str]]:
    """Clauses that every match of the parsed sequence must satisfy (conservative: a clause is
    only added when the pattern cannot match without one of its literals)."""
    clauses: list[frozenset[str]] = []
    run: list[str] = []

    def flush():
        if len(run) >= MIN_LITERAL:
            clauses.append(frozenset(["".join(run)]))
        run.clear()

    for op, av in items:
        if op is sre.LITERAL:
            run.append(chr(av))
            continue
        flush()
        if op is sre.SUBPATTERN:
            clauses += _required_literals(list(av[-1]))
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", None)) and av[0] >= 1:
            clauses += _required_literals(list(av[2]))
        elif op is getattr(sre, "ATOMIC_GROUP", None):
            clauses += _required_literals(list(av))
        elif op is sre.BRANCH:
            alternatives = []
            for branch in av[1]:
                branch_clauses = _required_literals(list(branch))
                if not branch_clauses:
                    alternatives = None
                    break
                # One clause per branch is enough to narrow: a single literal if it has one, else
                # the alternatives of its first clause (the branch needs one of them).
                singles = [next(iter(clause)) for clause in branch_clauses if len(clause) == 1]
                alternatives += [max(singles, key=len)] if singles else sorted(branch_clauses[0])
            if alternatives:
                clauses.append(frozenset(alternatives))
    flush()
    return clauses
