"""Skip a regex on text that cannot hold a match of it, decided from the regex itself (no ORM).

Python's regex engine tries a pattern that starts with `\\b`, `^` or a group at every position
of the text: about 0.06 ms per pattern on a 3.5 kB kernel, and the import's screening and
technique tags run some sixty such patterns per kernel. Most never match. This module reads a
pattern's syntax tree (re's own parser) and derives strings of which a match must contain one
(for `\\btry\\s*\\{`: "try" and "{"; for `torch\\.cuda\\.Stream|cudaStreamCreate`: one of
"torch.cuda.Stream", "cudaStreamCreate"). `could_match(pattern, text)` is False only when one
of those conditions fails, so a regex it rules out has no match: running it would find nothing.
It is exact by construction; a pattern it cannot read (ignore-case, lookarounds only, ...) has
no condition and always runs.
"""
import functools
import re
from re import _constants as C  # noqa: N812 - re's own names for the parser's opcodes
from re import _parser as sre_parse  # the parser of Python 3.11 (pinned), as search/code_query.py

# Keyed by id (hashing a compiled regex hashes its whole program, each time), holding the
# pattern itself so an id reused by another object is noticed.
_BY_PATTERN: dict = {}  # pattern -> its clauses, most selective first
_LITERAL_FIRST: dict = {}
# `\b` then word characters none of which a quantifier follows (the last one kept out if one does).
_BOUNDARY_WORD = re.compile(r"\\b(\w*?)(?=\w[?*+{]|(?!\w))")
MAX_CLAUSE = 8  # a clause of more strings costs more to test than the regex it could skip
_REPEATS = (C.MAX_REPEAT, C.MIN_REPEAT, getattr(C, "POSSESSIVE_REPEAT", C.MAX_REPEAT))


def could_match(pattern, text: str) -> bool:
    """False when `pattern` (a string or a compiled regex) certainly has no match in `text`."""
    known = _BY_PATTERN.get(id(pattern))
    if known is None or known[0] is not pattern:
        known = _BY_PATTERN[id(pattern)] = (pattern, tuple(
            tuple(sorted(clause, key=len, reverse=True))
            for clause in sorted(required_clauses(pattern), key=lambda c: -min(map(len, c)))))
    clauses = known[1]
    for clause in clauses:
        if len(clause) == 1:
            if clause[0] not in text:
                return False
        elif not any(literal in text for literal in clause):
            return False
    return True


def filter_possible(patterns, text: str) -> list:
    """The patterns, in order, less those that cannot match `text`."""
    return [pattern for pattern in patterns if could_match(pattern, text)]


def literal_first(pattern):
    """An equivalent compiled regex that sre can look for with its fast literal-prefix scan:
    `\\bword...` becomes `word(?<!\\wword)...` (a word boundary before a word character is the
    character before it not being one; the lookbehind checks just that once `word` is matched).
    Matches start and end where the original's do. Other patterns are returned compiled."""
    known = _LITERAL_FIRST.get(id(pattern))
    if known is None or known[0] is not pattern:
        source, flags = (pattern.pattern, pattern.flags) if isinstance(pattern, re.Pattern) else (pattern, 0)
        match = _BOUNDARY_WORD.match(source)
        if match and match.group(1):
            word = match.group(1)
            source = f"{word}(?<!\\w{word}){source[match.end(1):]}"
        known = _LITERAL_FIRST[id(pattern)] = (pattern, re.compile(source, flags))
    return known[1]


@functools.lru_cache(maxsize=4096)
def _clauses(source: str, flags: int) -> tuple[frozenset[str], ...]:
    try:
        parsed = sre_parse.parse(source, flags)
    except Exception:  # a pattern re would refuse anyway: no condition, it runs as it is
        return ()
    if (flags | parsed.state.flags) & (re.IGNORECASE | re.VERBOSE):
        return ()  # literals would need case folding (or are spread by whitespace): no condition
    return tuple(clause for clause in _sequence(parsed.data) if len(clause) <= MAX_CLAUSE)


def required_clauses(pattern) -> tuple[frozenset[str], ...]:
    """Conditions every match meets: for each clause, one of its strings occurs in the match."""
    if isinstance(pattern, re.Pattern):
        return _clauses(pattern.pattern, pattern.flags & ~re.UNICODE)
    return _clauses(pattern, 0)


def _sequence(items) -> list[frozenset[str]]:
    """Every item of a sequence is required: runs of literal characters are, and so is
    whatever each group or repeat (at least once) requires."""
    clauses, run = [], []
    for op, av in items:
        if op is C.LITERAL:
            run.append(chr(av))
            continue
        if run:
            clauses.append(frozenset(["".join(run)]))
            run = []
        if op is C.SUBPATTERN:
            group_id, add_flags, del_flags, body = av
            if add_flags & re.IGNORECASE:
                continue
            clauses.extend(_sequence(body.data))
        elif op in _REPEATS and av[0] >= 1:
            clauses.extend(_sequence(av[2].data))
        elif op is C.BRANCH:
            branch = _branch(av[1])
            if branch:
                clauses.append(branch)
        elif op is C.IN:
            chars = [chr(v) for kind, v in av if kind is C.LITERAL]
            if chars and len(chars) == len(av):  # a set of plain characters: one of them
                clauses.append(frozenset(chars))
    if run:
        clauses.append(frozenset(["".join(run)]))
    return clauses


def _branch(alternatives) -> frozenset[str] | None:
    """One of the alternatives matches, so one of their best conditions holds."""
    union = set()
    for alternative in alternatives:
        clauses = _sequence(alternative.data)
        if not clauses:
            return None  # this alternative requires nothing we can name
        union |= max(clauses, key=lambda clause: min(len(s) for s in clause))
    return frozenset(union)
