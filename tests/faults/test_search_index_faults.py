"""A missing, empty, truncated, garbled or mismatched index file, written by the real
`build_index`: pages keep being served, the search page and API say the index is being
rebuilt (never a 500), exactly one `rebuild_index` job is queued on the real Huey queue, and
once that job has run, search answers again."""
import struct

import numpy as np
import pytest
from django.core.management import call_command
from huey.contrib.djhuey import HUEY

from kernels.models import Kernel
from kernels.services import archive_import_file
from search import storage
from search.index import build_index_file
from search.tasks import rebuild_index


def _missing(path):
    path.unlink()


def _empty(path):
    path.write_bytes(b"")


def _truncated(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _garbled_header(path):
    data = bytearray(path.read_bytes())
    data[:64] = b"\xde\xad\xbe\xef" * 16
    path.write_bytes(bytes(data))


def _impossible_size(path):
    # The flat index's vector count (8 bytes, floats) garbled to ~90 billion: FAISS's read asks
    # for ~360 GB and raises MemoryError (std::bad_alloc), not its usual RuntimeError.
    data = bytearray(path.read_bytes())
    count = Kernel.objects.count() * 384
    at = data.index(struct.pack("<Q", count))
    data[at:at + 8] = struct.pack("<Q", count + (21 << 32))
    path.write_bytes(bytes(data))


def _other_dimension(path):
    # A readable index, but of 8-d vectors (another model's): its answers would be nonsense.
    vectors = np.eye(8, dtype=np.float32)
    build_index_file(path, list(Kernel.objects.values_list("id", flat=True)[:8]), vectors)


DAMAGES = [_missing, _empty, _truncated, _garbled_header, _impossible_size, _other_dimension]


def _queued_rebuilds() -> dict:
    return {task.id: task for task in HUEY.pending() if task.name == rebuild_index.task_class.__name__}


# transaction=True: the job runs as in a worker, whose db_task wrapper closes the connection
# when it is done; inside a test transaction that would close the test's own.
@pytest.mark.django_db(transaction=True)
def test_a_damaged_index_says_rebuilding_queues_one_rebuild_and_comes_back(client, archive_path, generous_throttles):
    archive_import_file(path=archive_path, hardware="NVIDIA H100")
    call_command("build_index", "--no-progress")
    kernel = Kernel.objects.filter(task__level=1).first()
    assert client.get("/api/search/", {"q": "matrix multiplication"}).json()["state"] == "ready"

    for damage in DAMAGES:
        path = storage.index_path()
        damage(path)
        before = _queued_rebuilds()

        for url in ("/", "/leaderboard/", f"/kernels/{kernel.id}/", "/map/", "/api/kernels/",
                    f"/api/kernels/{kernel.id}/related/"):
            assert client.get(url).status_code == 200, (damage.__name__, url)
        page = client.get("/search/", {"q": "matrix multiplication"})
        assert page.status_code == 200 and "being rebuilt" in page.content.decode(), damage.__name__
        # later requests see the rebuild pending (a one-word query would be a code search, which
        # needs no embedding index: the meaning search is asked for by name)
        for query in ("tiled matmul", "softmax"):
            answer = client.get("/api/search/", {"q": query, "mode": "meaning"})
            assert answer.status_code == 200, damage.__name__
            body = answer.json()
            assert body["state"] == "rebuilding" and "rebuilt" in body["message"] and body["results"] == []

        queued = {id_: task for id_, task in _queued_rebuilds().items() if id_ not in before}
        assert len(queued) == 1, (damage.__name__, queued)
        task = next(iter(queued.values()))
        HUEY.execute(task)  # what a consumer does with it: the real rebuild_index job
        HUEY.revoke_by_id(task.id, revoke_once=True)  # this run's copy is done; a consumer skips it

        body = client.get("/api/search/", {"q": "square matrix multiplication", "level": 1}).json()
        assert body["state"] == "ready" and body["results"], damage.__name__
        assert body["results"][0]["task"].startswith("L1 T903"), body["results"][0]  # the square matmul task
        assert len(client.get(f"/api/kernels/{kernel.id}/related/").json()["related"]) == 10
        assert not storage.rebuild_requested_recently()
