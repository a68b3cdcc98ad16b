"""Semantic search, related kernels and the jobs that keep the index current, on the test
archive (6 tasks, 2 to 5 kernels each); retrieval quality at scale on the shared sample."""
from collections import Counter

import pytest
from django.template.loader import render_to_string

from kernels.models import Kernel, Task
from kernels.techniques import detect_techniques, encode_tags
from search import selectors, services, storage
from search.models import KernelEmbedding

pytestmark = pytest.mark.django_db


def task_of(hit):
    return (hit.level, hit.task_number)


def square_matmul_task() -> Task:
    return Task.objects.get(op_name__endswith="_Square_matmul_1024_demo")


def test_square_matrix_multiplication_ranks_the_square_matmul_task_first(indexed_archive):
    results = selectors.search_kernels(query="square matrix multiplication", limit=10)
    assert results.state == "ready"
    task = square_matmul_task()
    # Its kernels (4 of the archive's 22) take the first places but one.
    assert task_of(results.hits[0]) == (task.level, task.task_number)
    top = {hit.kernel_id for hit in results.hits[:task.kernels.count() + 1]}
    assert set(task.kernels.values_list("id", flat=True)) <= top
    assert results.hits[0].similarity > results.hits[-1].similarity > 0


def test_square_matrix_multiplication_ranks_level_1_task_1_first_on_the_shared_sample(indexed_shared_sample):
    results = selectors.search_kernels(query="square matrix multiplication", limit=10)
    assert results.state == "ready"
    assert [task_of(hit) for hit in results.hits] == [(1, 1)] * 10
    assert results.hits[0].similarity > results.hits[-1].similarity > 0


def test_filters_level_correctness_and_technique(indexed_archive):
    level_2 = selectors.search_kernels(query="matrix multiplication", level=2, limit=10).hits
    assert level_2 and all(hit.level == 2 for hit in level_2)
    correct = selectors.search_kernels(query="convolution relu", correct_only=True, limit=100).hits
    assert correct and all(hit.correct for hit in correct)
    assert len(correct) == Kernel.objects.filter(claimed_correct=True).count()  # widened until enough pass
    shuffles = selectors.search_kernels(query="reduction", technique="warp_shuffle", limit=50).hits
    assert shuffles and all("warp_shuffle" in hit.techniques for hit in shuffles)
    assert "warp shuffles" in shuffles[0].technique_labels


@pytest.mark.parametrize("index", [0, 2, 4])
def test_pasted_code_finds_its_kernel(indexed_archive, index):
    kernel = Kernel.objects.filter(task__level=3).order_by("id")[index]
    hit = selectors.search_kernels(query=kernel.code, limit=3).hits[0]
    assert hit.kernel_id == kernel.id and hit.similarity > 0.95


def test_a_kernels_nearest_neighbour_solves_the_same_task(indexed_archive):
    """On the test archive: for every task with three kernels or more."""
    tasks = [task for task in Task.objects.all() if task.kernels.count() >= 3]
    assert len(tasks) >= 4
    for task in tasks:
        kernel = task.kernels.order_by("id").first()
        related = selectors.related_kernels(kernel.id, k=10)
        assert len(related) == 10 and kernel.id not in {hit.kernel_id for hit in related}
        assert task_of(related[0]) == (task.level, task.task_number), (task, [task_of(hit) for hit in related])


def test_related_kernels_are_mostly_from_the_same_task_on_the_shared_sample(indexed_shared_sample):
    for task in Task.objects.all():
        kernel = task.kernels.order_by("id").first()
        related = selectors.related_kernels(kernel.id, k=10)
        assert len(related) == 10 and kernel.id not in {hit.kernel_id for hit in related}
        same_task = sum(task_of(hit) == (task.level, task.task_number) for hit in related)
        assert same_task >= 8, (task, Counter(task_of(hit) for hit in related))


def test_exact_duplicates_are_folded(indexed_archive, embed_once):
    original = Kernel.objects.filter(task__level=1).order_by("id").first()
    other_task = Task.objects.create(level=1, task_number=99, op_name="99_Square_matrix_multiplication_copy",
                                     reference_code="")
    copy = Kernel.objects.create(task=other_task, name=original.name, kind=original.kind, code=original.code,
                                 code_sha256=original.code_sha256, source_archive="copies",
                                 technique_tags=original.technique_tags)
    services.search_index_add(kernel_ids=[copy.id])
    # The copy is neither related to its original nor listed beside it.
    assert copy.id not in {hit.kernel_id for hit in selectors.related_kernels(original.id)}
    neighbour = selectors.related_kernels(original.id)[0].kernel_id
    rows = selectors.related_kernels(neighbour, k=10)
    folded = [hit for hit in rows if hit.kernel_id in (original.id, copy.id)]
    assert len(folded) == 1 and folded[0].duplicates_folded == 1


def test_embeddings_are_skipped_when_text_is_unchanged(indexed_archive):
    summary = services.kernel_embeddings_update()
    n = Kernel.objects.count()
    assert (summary.kernels, summary.embedded, summary.unchanged) == (n, 0, n)
    kernel = Kernel.objects.order_by("id").first()
    kernel.name = "renamed_kernel"
    kernel.save()
    assert services.kernel_embeddings_update().embedded == 1


def test_import_queues_an_incremental_update_after_commit(indexed_archive, huey_immediate,
                                                          django_capture_on_commit_callbacks):
    task = square_matmul_task()
    n = Kernel.objects.count()
    code = "__global__ void transpose_kernel(float* a) { __shared__ float tile[32][33]; }"
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        kernel = Kernel.objects.create(task=task, name="transpose_new", kind="cuda_forward", code=code,
                                       code_sha256="f" * 64, source_archive="new",
                                       technique_tags=encode_tags(detect_techniques(code)))
        services.queue_index_update([kernel.id])
        assert storage.index_reader().size() == n  # nothing happens before the commit
    assert len(callbacks) == 1
    callbacks[0]()
    assert storage.index_reader().size() == n + 1
    assert KernelEmbedding.objects.filter(kernel=kernel).exists()
    assert selectors.search_kernels(query=code, limit=1).hits[0].kernel_id == kernel.id


@pytest.mark.parametrize("damage", ["missing", "corrupt"])
def test_a_missing_or_corrupt_index_says_rebuilding_and_queues_one_rebuild(imported_archive, embed_once, monkeypatch,
                                                                           damage):
    services.search_index_rebuild()
    if damage == "missing":
        storage.index_path().unlink()
    else:
        storage.index_path().write_bytes(b"\0" * 100)
    queued = []
    monkeypatch.setattr("search.tasks.rebuild_index", lambda: queued.append(1))
    results = selectors.search_kernels(query="matrix multiplication")
    assert results.state == "rebuilding" and "rebuilt" in results.message and not results.hits
    assert selectors.search_kernels(query="conv").state == "rebuilding"
    assert queued == [1]  # one request queues the rebuild; the next ones see it pending
    assert selectors.related_kernels(Kernel.objects.first().id) == []


def test_the_queued_rebuild_brings_search_back(imported_archive, embed_once, huey_immediate):
    assert selectors.search_kernels(query="matrix multiplication").state == "rebuilding"
    assert selectors.search_kernels(query="matrix multiplication").state == "ready"
    assert not storage.rebuild_requested_recently()


def test_related_include_renders_the_rows(indexed_archive):
    kernel = Kernel.objects.filter(task__level=2).first()
    html = render_to_string("search/_related.html", {"related": selectors.related_kernels(kernel.id)})
    assert html.count("data-kernel-id=") == 10 and "Related kernels" in html and "/kernels/" in html
    assert "No related kernels yet" in render_to_string("search/_related.html", {"related": []})
