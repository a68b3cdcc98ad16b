"""The site's one boolean rule, for settings (archive_site/env.py) and query parameters
(kernels/leaderboard_query.py) alike: 1, true, yes, on are true; 0, false, no, off and the empty
string are false, in any case and with surrounding spaces ignored; any other word is neither,
and the caller says what was wrong where."""
TRUE = frozenset({"1", "true", "yes", "on"})
FALSE = frozenset({"0", "false", "no", "off", ""})


def parse(raw: str) -> bool | None:
    """True or False for a word of the rule, None for anything else."""
    word = raw.strip().lower()
    if word in TRUE:
        return True
    if word in FALSE:
        return False
    return None
