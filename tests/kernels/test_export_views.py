"""/api/exports/: streamed downloads of the whole archive or a leaderboard filter, which
parse back; bad parameters answer 400 naming the parameter."""
import io
import json

import pandas as pd
import pyarrow.parquet as pq
import pytest
from django.http import StreamingHttpResponse

from kernels.export.links import download_links, download_url
from kernels.models import Kernel
from kernels.techniques import detect_techniques

from .export_support import import_sample

pytestmark = pytest.mark.django_db

URL = "/api/exports/"
ARCHIVE_COLUMNS = 19


@pytest.fixture
def sample(archive_path, archive_rows):
    """The test archive imported; its rows."""
    import_sample(archive_path)
    return archive_rows


def download(client, **params):
    response = client.get(URL, params)
    assert response.status_code == 200, response.content
    assert isinstance(response, StreamingHttpResponse) and response.streaming
    return response, b"".join(response.streaming_content)


def test_the_whole_archive_downloads_as_streamed_parquet(client, sample):
    response, body = download(client, format="parquet")
    assert response["Content-Type"] == "application/vnd.apache.parquet"
    assert response["Content-Disposition"] == 'attachment; filename="kernel-archive.parquet"'
    table = pq.read_table(io.BytesIO(body))
    assert table.num_rows == len(sample)
    assert table.column_names[:ARCHIVE_COLUMNS][-1] == "__index_level_0__"
    assert sorted(set(table.column("Level_ID").to_pylist())) == [1, 2, 3]


def test_csv_of_a_leaderboard_filter_parses_back(client, sample):
    response, body = download(client, format="csv", level="1", correct_only="1")
    assert response["Content-Type"].startswith("text/csv")
    assert 'filename="kernel-archive-level_1-correct.csv"' in response["Content-Disposition"]
    frame = pd.read_csv(io.BytesIO(body))
    assert len(frame) == Kernel.objects.filter(task__level=1, claimed_correct=True).count() == sum(
        r["Level_ID"] == 1 and r["Correct"] for r in sample)
    assert frame.Correct.all() and (frame.Level_ID == 1).all()
    assert json.loads(frame.Technique_Tags.iloc[0]) == Kernel.objects.get(id=frame.Kernel_ID.iloc[0]).techniques


def test_jsonl_filtered_by_op_name_text_and_technique(client, sample):
    _, body = download(client, format="jsonl", q="SQUARE_matMUL", archive_compatible="true")
    rows = [json.loads(line) for line in body.splitlines()]
    square = [r for r in sample if "square_matmul" in r["Op_Name"].lower()]
    assert len(rows) == len(square) and {row["Op_Name"] for row in rows} == {r["Op_Name"] for r in square}
    assert len(rows[0]) == ARCHIVE_COLUMNS
    _, body = download(client, format="jsonl", technique="warp_shuffle")
    rows = [json.loads(line) for line in body.splitlines()]
    shuffling = [r for r in sample if "warp_shuffle" in detect_techniques(r["CUDA_Code"])]
    assert len(rows) == len(shuffling) < len(sample) and all("warp_shuffle" in row["Technique_Tags"] for row in rows)


def test_an_empty_selection_still_downloads_a_readable_file(client, sample):
    _, body = download(client, format="parquet", verified_only="1")
    assert pq.read_table(io.BytesIO(body)).num_rows == 0
    _, body = download(client, format="csv", q="no such task")
    assert pd.read_csv(io.BytesIO(body)).columns[0] == "Op_Name"


@pytest.mark.parametrize("params, field", [
    ({"format": "xlsx"}, "format"),
    ({"format": "csv", "level": "two"}, "level"),
    ({"level": "0"}, "level"),
    ({"correct_only": "maybe"}, "correct_only"),
    ({"verified_only": "2"}, "verified_only"),
    ({"technique": "magic"}, "technique"),
    ({"q": "x" * 201}, "q"),
])
def test_bad_parameters_are_a_400_naming_the_parameter(client, params, field):
    response = client.get(URL, params)
    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    errors = response.json()["errors"]  # the API's one error shape (web/api_errors.py)
    assert [e["field"] for e in errors] == [field] and errors[0]["message"]


def test_page_links_keep_the_row_filters_under_the_export_spelling(sample):
    links = download_links({"level": "level_2", "correct": "1", "op_name": "conv", "sort_by": "runtime", "page": "3"})
    assert list(links) == ["Parquet", "CSV", "JSONL"]
    assert links["CSV"] == f"{URL}?format=csv&level=2&correct_only=1&q=conv"
    assert download_url("parquet") == f"{URL}?format=parquet"
    assert download_url("jsonl", {"level": "all", "technique": "atomics"}) == f"{URL}?format=jsonl&technique=atomics"


def test_page_links_download_what_they_say(client, sample):
    url = download_links({"level": "3", "verified": "0", "q": "MLP"})["JSONL"]
    body = b"".join(client.get(url).streaming_content)
    assert {json.loads(line)["Level_ID"] for line in body.splitlines()} == {3}
