"""Screening at import, without a GPU: the harness's static scan and the archive's profiles.

Run on the real archives: the demo archive (its four cheats flagged, none of its ten honest
kernels) and the shared sample (the level-3 kernels whose layers are torch::linear calls,
nothing in levels 1 and 2), as docs/screening.md reports."""
from pathlib import Path

import pytest

from kernels import selectors
from kernels.models import Kernel, Profile
from kernels.screening_services import kernel_screening_refresh
from kernels.services import archive_import_file
from tests.kernels.kernel_factories import make_kernel, make_task, make_verification

REPO = Path(__file__).resolve().parents[2]
DEMO_CHEATS = {
    "relu_stale_memory": {"suspected_no_custom_kernel_ran", "suspected_no_kernel_profiled"},
    "relu_cached_by_pointer": {"suspected_cached_output", "suspected_no_custom_kernel_ran",
                               "suspected_no_kernel_profiled"},
    "matmul_library_call": {"suspected_library_call", "suspected_no_custom_kernel_ran"},
    "tiny_matmul_scaled_zeros": {"suspected_no_custom_kernel_ran"},
}

pytestmark = pytest.mark.django_db


def test_demo_archive_flags_its_four_cheats_and_no_honest_kernel():
    archive_import_file(path=REPO / "evaluator" / "demo_archive" / "demo_archive.jsonl")
    flagged = {k.name: {f["name"] for f in k.screening_flags} for k in Kernel.objects.filter(suspected=True)}
    assert flagged == DEMO_CHEATS
    assert not Kernel.objects.filter(suspected=False).exclude(screening_flags=[]).exists()
    stale = Kernel.objects.get(name="relu_stale_memory")
    evidence = {f["name"]: f["evidence"] for f in stale.screening_flags}
    assert "no device kernel" in evidence["suspected_no_custom_kernel_ran"]
    zeros = Kernel.objects.get(name="tiny_matmul_scaled_zeros")
    assert "at::native::vectorized_elementwise_kernel" in zeros.screening_flags[0]["evidence"]
    # Unverified, the suspects are not ranked: the top kernels are honest ones.
    assert not set(DEMO_CHEATS) & {k.name for k in selectors.top_kernels()}


def test_shared_sample_flags_only_level_3_library_layers(sample_path):
    archive_import_file(path=sample_path, hardware="NVIDIA H100")
    suspected = list(Kernel.objects.filter(suspected=True).select_related("task"))
    assert len(suspected) == 23 and {k.task.level for k in suspected} == {3}
    for kernel in suspected:
        assert [f["name"] for f in kernel.screening_flags] == ["suspected_library_call"]
        assert "torch::linear" in kernel.screening_flags[0]["evidence"]
    # Every level-3 kernel that calls torch::linear, and no other.
    linear = {k.id for k in Kernel.objects.filter(task__level=3, code__contains="torch::linear")}
    assert {k.id for k in suspected} == linear


def test_a_suspect_is_not_ranked_until_a_verification_passes_it(client):
    task = make_task(1, 1)
    honest = make_kernel(task, 0, speedup=1.1)
    suspect = make_kernel(task, 1, speedup=9.0, code="#include <torch/extension.h>\n"
                          "torch::Tensor forward(torch::Tensor a, torch::Tensor b) { return at::matmul(a, b); }\n")
    Profile.objects.create(kernel=suspect, kind="torch", raw_text="x", parsed={
        "aten::mm": {"cpu_time_total": 5.0, "device_time_total": 0.0},
        "<script>alert(1)</script>_gemm": {"cpu_time_total": 0.0, "device_time_total": 90.0}})
    kernel_screening_refresh()
    suspect.refresh_from_db()
    assert suspect.suspected
    assert {f["name"] for f in suspect.screening_flags} == {"suspected_library_call", "suspected_no_custom_kernel_ran"}
    assert selectors.best_kernel_of_task(task.id).id == honest.id
    html = client.get(f"/kernels/{suspect.id}/").content.decode()
    assert "suspected, not proven" in html and "library does the work?" in html
    assert "<script>alert(1)" not in html and "&lt;script&gt;alert(1)" in html
    assert "cheat" not in html.split('id="findings"')[1].split("</section>")[0].replace("(a library", "")
    make_verification(suspect, speedup_eager=2.0)  # the harness passed it: suspicion is outranked
    assert selectors.best_kernel_of_task(task.id).id == suspect.id
    assert "suspected, not proven" not in client.get(f"/kernels/{suspect.id}/").content.decode()


def test_import_screens_each_batch_as_the_rows_would_be_screened(sample_path):
    """The import screens kernels from its records, batch by batch, and runs the archive-wide
    "no kernel profiled" check at its end; screening the stored rows afterwards changes nothing.
    Three real archives: the demo archive (that check flags two), the shared sample, CUDA-L1."""
    archive_import_file(path=REPO / "evaluator" / "demo_archive" / "demo_archive.jsonl")
    archive_import_file(path=sample_path, hardware="NVIDIA H100")
    archive_import_file(path=sample_path.parent / "cuda_l1" / "h100_subset.jsonl")
    at_import = {k.id: (k.screening_flags, k.suspected) for k in Kernel.objects.all()}
    assert sum(any(f["name"] == "suspected_no_kernel_profiled" for f in flags) for flags, _ in at_import.values()) == 2
    kernel_screening_refresh()
    assert {k.id: (k.screening_flags, k.suspected) for k in Kernel.objects.all()} == at_import
