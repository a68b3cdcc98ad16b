"""Download links for pages: the current leaderboard filter, as Parquet, CSV or JSONL.

A page passes its own query parameters; those that choose rows are kept, under the
spelling /api/exports/ reads (the leaderboard also accepts `correct`, `verified`,
`op_name` and `level=level_2`); sort order and page number do not change which rows a
download holds and are dropped:

    {% for label, url in export_links.items %}<a href="{{ url }}">{{ label }}</a>{% endfor %}
    with export_links = download_links(request.GET) in the view's context.
"""
import re
from urllib.parse import urlencode

from django.urls import reverse

DOWNLOAD_FORMATS = {"parquet": "Parquet", "csv": "CSV", "jsonl": "JSONL"}
# Export parameter <- the spellings a page may use for it, first present wins.
FILTER_PARAMS = {
    "level": ("level",),
    "correct_only": ("correct_only", "correct"),
    "verified_only": ("verified_only", "verified"),
    "q": ("q", "op_name"),
    "technique": ("technique",),
    "hardware": ("hardware",),
    "experiment": ("experiment",),
    "include": ("include",),
}
_LEVEL_SPELLING = re.compile(r"^level[_ ]?(\d+)$", re.I)


def download_url(file_format: str, query_params=None) -> str:
    """/api/exports/?format=...&<the row filters among query_params>."""
    if file_format not in DOWNLOAD_FORMATS:
        raise ValueError(f"unknown download format {file_format!r}; one of {', '.join(DOWNLOAD_FORMATS)}")
    query_params = query_params or {}
    params = [("format", file_format)]
    for name, spellings in FILTER_PARAMS.items():
        value = next((query_params.get(s) for s in spellings if query_params.get(s) not in (None, "")), None)
        if name == "level" and value is not None:
            value = _LEVEL_SPELLING.sub(r"\1", value.strip())
            if value.lower() == "all":
                continue
        if value is not None:
            params.append((name, value))
    return f"{reverse('export-download')}?{urlencode(params)}"


def download_links(query_params=None) -> dict[str, str]:
    """{"Parquet": url, "CSV": url, "JSONL": url} for the rows the page shows."""
    return {label: download_url(file_format, query_params) for file_format, label in DOWNLOAD_FORMATS.items()}
