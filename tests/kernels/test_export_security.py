"""Issue #37's findings on outputs: archive text written into a CSV export or a chart is data,
never a formula or markup, whatever an imported archive put in it."""
import csv
import io
import json
import re
from pathlib import Path

import pytest
from django.core.cache import cache

from evaluator.verification_import import verification_import_file
from kernels.export.encoders import csv_cell
from kernels.models import Kernel
from kernels.services import archive_import_file

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "evaluator" / "demo_archive" / "demo_archive.jsonl"
HOSTILE_GPU = '<a href="https://evil.example/">NVIDIA H200</a>'

pytestmark = pytest.mark.django_db


def _archive_with(tmp_path, names: list[str] = (), hardware: str | None = None) -> Path:
    """The demo archive with its first kernels renamed, or its hardware replaced, as a hostile
    archive would write them."""
    rows = [json.loads(line) for line in DEMO.read_text().splitlines() if line.strip()]
    for row, name in zip(rows, names):
        row["Kernel_Name"] = name
    for row in rows:
        row["Hardware"] = hardware or row.get("Hardware")
    path = tmp_path / "hostile.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.mark.parametrize("start", ["=", "+", "-", "@", "\t", "\r"])
def test_csv_cells_that_a_spreadsheet_would_run_start_with_a_quote(start):
    assert csv_cell(f'{start}HYPERLINK("https://evil.example","x")') == f"'{start}HYPERLINK(\"https://evil.example\",\"x\")"


def test_csv_cells_that_are_data_stay_as_they_are():
    assert [csv_cell(value) for value in ("relu", "", None, -1.5, 0, "a=b", "'=x")] == [
        "relu", "", None, -1.5, 0, "a=b", "'=x"]


def test_a_formula_named_kernel_is_text_in_the_csv_export(tmp_path, client):
    names = ['=HYPERLINK("https://evil.example","click")', "+cmd|' /C calc'!A0", "@SUM(1+1)", "-2+3", "\t=1"]
    archive_import_file(path=_archive_with(tmp_path, names))
    body = b"".join(client.get("/api/exports/", {"format": "csv", "include": "all"}).streaming_content)
    rows = list(csv.DictReader(io.StringIO(body.decode("utf-8"))))
    written = {row["Kernel_Name"] for row in rows}
    assert {"'" + name for name in names} <= written
    assert not any(row[column].startswith(("=", "+", "-", "@", "\t", "\r")) for row in rows for column in row
                   if isinstance(row[column], str) and not re.fullmatch(r"-?[0-9.e+-]+", row[column]))
    # JSON lines carry the name exactly: the quote is the CSV's, for spreadsheets.
    jsonl = b"".join(client.get("/api/exports/", {"format": "jsonl", "include": "all"}).streaming_content)
    assert names[0] in {json.loads(line)["Kernel_Name"] for line in jsonl.splitlines()}


def test_the_home_scatters_legend_shows_an_imported_hardware_string_as_text(tmp_path, client):
    cache.clear()
    archive_import_file(path=_archive_with(tmp_path, hardware=HOSTILE_GPU))
    verification_import_file(path=REPO / "evaluator" / "h200_results" / "demo_archive_h200.jsonl")
    assert Kernel.objects.filter(hardware=HOSTILE_GPU, verified=True).exists()
    html = client.get("/").content.decode()
    chart = json.loads(re.search(r'<script id="chart-claimed-vs-remeasured" type="application/json">(.*?)</script>',
                                 html, re.S).group(1))
    names = [series["name"] for series in chart["data"]]
    assert names == ["claimed on &lt;a href=&quot;https://evil.example/&quot;&gt;NVIDIA H200&lt;/a&gt;, "
                     "re-measured on NVIDIA H200"]
    assert "<a href" not in json.dumps(chart) and 'href="https://evil.example/"' not in html
