"""Code search on the test archive: exact identifiers and regular expressions through the code
index (SQLite FTS5 here, pg_trgm under make test-postgres), snippets, sorting, pages, bad patterns."""
import re
import time

import pytest
from django.db import connection
from django.http import Http404

from kernels.models import Kernel, Task
from search import code_index, code_query
from search.code_query import InvalidPattern, regex_pattern
from search.results import search_page

pytestmark = pytest.mark.django_db


def kernels_whose_code(predicate) -> set[int]:
    return {k.id for k in Kernel.objects.only("id", "code") if predicate(k.code)}


def test_an_identifier_finds_exactly_the_kernels_that_contain_it(imported_archive):
    expected = kernels_whose_code(lambda code: "__shfl_xor_sync" in code)
    assert len(expected) >= 1 and len(expected) < Kernel.objects.count()
    found = search_page(query="__shfl_xor_sync")  # auto mode: one token is code
    assert found.mode == "exact"
    assert {hit.kernel_id for hit in found.hits} == expected and found.count == len(expected)
    # Kernels with "sync" in their names or other shuffles are not hits.
    shuffles = kernels_whose_code(lambda code: "__shfl_down_sync" in code)
    assert shuffles and not shuffles & {hit.kernel_id for hit in found.hits}


def test_exact_search_is_case_sensitive_and_counts_lines(imported_archive):
    kernel = Kernel.objects.get(id__in=kernels_whose_code(lambda code: "__shfl_xor_sync" in code))
    hit = search_page(query="__shfl_xor_sync", mode="exact").hits[0]
    lines = kernel.code.splitlines()
    matching = [n for n, line in enumerate(lines, start=1) if "__shfl_xor_sync" in line]
    assert hit.matched_lines == len(matching)
    assert [s.number for s in hit.snippets] == matching[:code_query.SNIPPET_LINES]
    first = hit.snippets[0]
    assert first.text.strip() == lines[matching[0] - 1].strip()
    assert [part.text for part in first.parts if part.matched] == ["__shfl_xor_sync"] * lines[matching[0] - 1].count(
        "__shfl_xor_sync")
    assert search_page(query="__SHFL_XOR_SYNC", mode="exact").count == 0


def test_a_regular_expression_finds_every_shuffle(imported_archive):
    pattern = re.compile(r"__shfl_(xor|down)_sync")
    expected = kernels_whose_code(lambda code: pattern.search(code) is not None)
    found = search_page(query=r"__shfl_(xor|down)_sync", mode="regex")
    assert found.mode == "regex" and {hit.kernel_id for hit in found.hits} == expected and len(expected) >= 2
    case_blind = search_page(query=r"(?i)__SHFL_(XOR|DOWN)_SYNC", mode="regex")
    assert {hit.kernel_id for hit in case_blind.hits} == expected


def test_filters_sorting_and_pages(imported_archive):
    everything = search_page(query="__global__", mode="exact", page_size=5)
    assert everything.count == kernels_whose_code(lambda code: "__global__" in code).__len__() > 10
    pages = [search_page(query="__global__", mode="exact", page_size=5, page=n).hits
             for n in range(1, everything.page.paginator.num_pages + 1)]
    ids = [hit.kernel_id for page in pages for hit in page]
    assert len(ids) == len(set(ids)) == everything.count  # every match once, over the pages
    with pytest.raises(Http404, match="Page 99 does not exist"):
        search_page(query="__global__", mode="exact", page_size=5, page=99)

    by_speedup = search_page(query="__global__", mode="exact", sort="speedup", page_size=100).hits
    speeds = [hit.remeasured_speedup if hit.verified else hit.speedup for hit in by_speedup]
    known = [s for s in speeds if s is not None]
    assert known == sorted(known, reverse=True) and speeds[:len(known)] == known  # unknown ones last
    level_3 = search_page(query="__global__", mode="exact", level=3, correct_only=True, page_size=100).hits
    assert level_3 and all(hit.level == 3 and hit.correct for hit in level_3)
    by_runtime = search_page(query=r"__global__\s+void", mode="regex", sort="runtime", page_size=100).hits
    runtimes = [hit.remeasured_runtime_ms if hit.verified else hit.runtime_ms for hit in by_runtime]
    known = [r for r in runtimes if r is not None]
    assert known == sorted(known) and runtimes[:len(known)] == known


def test_incorrect_kernels_have_no_speedup(imported_archive):
    hits = search_page(query="__global__", mode="exact", page_size=100).hits
    incorrect = [hit for hit in hits if not hit.correct]
    assert incorrect and all(hit.speedup is None and hit.runtime_ms is None for hit in incorrect)


@pytest.mark.parametrize("pattern, problem", [
    ("(", "not a valid regular expression"),
    (r"\w+", "plain run of at least 3 characters"),
    ("x" * 301, "at most 300 characters"),
    (r"(abc){5000}", "repeat counts above 1000"),
])
def test_bad_patterns_get_a_clear_error(imported_archive, pattern, problem):
    with pytest.raises(InvalidPattern, match=re.escape(problem)):
        search_page(query=pattern, mode="regex")


def test_a_catastrophic_pattern_is_stopped_by_its_time_limit():
    pattern = regex_pattern(r"(x+x+)+y_sync")
    started = time.monotonic()
    with pytest.raises(code_query.PatternTimeout):
        pattern.count("x" * 5000)
    assert time.monotonic() - started < 20 * code_query.REGEX_TIMEOUT_S  # bounded, not exponential


def test_a_catastrophic_pattern_on_the_archive_is_reported_not_hung(imported_archive, monkeypatch):
    task = Task.objects.first()
    Kernel.objects.create(task=task, name="padding", kind="cuda_forward", code="__pad__" + "x" * 5000,
                          code_sha256="e" * 64, source_archive="test")
    found = search_page(query=r"__pad__(x+x+)+y", mode="regex")
    assert found.count == 0 and any("time limit" in notice for notice in found.notices)


def test_the_index_follows_inserts_updates_and_deletes(imported_archive):
    task = Task.objects.first()
    kernel = Kernel.objects.create(task=task, name="fresh", kind="cuda_forward", code="int cp_async_bulk_marker;",
                                   code_sha256="d" * 64, source_archive="test")
    assert [h.kernel_id for h in search_page(query="cp_async_bulk_marker").hits] == [kernel.id]
    kernel.code = "int renamed_marker;"
    kernel.save()
    assert search_page(query="cp_async_bulk_marker", mode="exact").count == 0
    assert [h.kernel_id for h in search_page(query="renamed_marker", mode="exact").hits] == [kernel.id]
    kernel.delete()
    assert search_page(query="renamed_marker", mode="exact").count == 0


def test_lookups_go_through_the_index_not_a_scan(imported_archive):
    found = code_index.kernels_containing(Kernel.objects.all(), [frozenset(["__shfl_xor_sync"])],
                                          case_insensitive=False, connection=connection)
    sql, params = found.values("id").query.sql_with_params()
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # A 22-row table: the planner would scan it. With scans of the table (sequential, or
            # along another index filtering every row) made dear, what is left is the index
            # that can answer the pattern; without one the plan would still scan.
            cursor.execute("SET enable_seqscan = off")
            cursor.execute("SET enable_indexscan = off")
            cursor.execute("SET enable_indexonlyscan = off")
            cursor.execute("EXPLAIN " + sql, params)
            plan = " ".join(row[0] for row in cursor.fetchall())
            assert code_index.PG_INDEX in plan
        else:
            cursor.execute("EXPLAIN QUERY PLAN " + sql, params)
            plan = " ".join(str(row[-1]) for row in cursor.fetchall())
            assert f"{code_index.FTS_TABLE} VIRTUAL TABLE INDEX" in plan


@pytest.mark.skipif("connection.vendor != 'sqlite'")
def test_triggers_dropped_by_a_table_rebuild_come_back_with_the_index(imported_archive):
    with connection.cursor() as cursor:
        cursor.execute("DROP TRIGGER search_kernel_code_ai")
    assert code_index.restore_code_index(connection) is True
    assert code_index.restore_code_index(connection) is False  # nothing missing now
    task = Task.objects.first()
    kernel = Kernel.objects.create(task=task, name="after", kind="cuda_forward", code="int restored_marker;",
                                   code_sha256="c" * 64, source_archive="test")
    assert [h.kernel_id for h in search_page(query="restored_marker").hits] == [kernel.id]
