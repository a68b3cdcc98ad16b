"""Unit tests of the harness's pure checks: error metrics, output structure, weak-task
statistics, identity snapshots, the dispatcher op recorder and the static scan."""
import time

import pytest
import torch

from verifier.core import checks as checks
from verifier.core import guard as guard
from verifier.core import inputs as inp
from verifier.core import static_scan as static

TOL = {"abs": 1e-2, "rel": 1e-3}


def test_compare_exact_and_small_errors_pass():
    ref = torch.randn(64, 64)
    assert checks.compare([ref.clone()], [ref], TOL)["passed"]
    res = checks.compare([ref + 1e-5], [ref], TOL)
    assert res["passed"] and 0 < res["max_abs_err"] < 2e-5 and res["rel_norm_err"] < 1e-4


@pytest.mark.parametrize("make_candidate", [
    lambda ref: ref + 1e-3 * torch.randn_like(ref),                       # all finite, some outside
    lambda ref: torch.where(torch.rand_like(ref) < 0.01, torch.nan, ref),  # NaN where the reference is finite
    lambda ref: torch.where(torch.rand_like(ref) < 0.01, torch.inf, ref * 1.0001),
])
def test_compare_in_chunks_agrees_with_one_pass(monkeypatch, make_candidate):
    """Large outputs are compared a chunk at a time (on the GPU when there is one): every figure
    equals the one-pass comparison's, chunk edges and non-finite values included."""
    ref = [torch.randn(301, 77), torch.randint(-3, 3, (1000,)), torch.randn(5) * 1e-3]
    ref[0][3, 5] = torch.inf  # a non-finite reference value, matched by the candidate below
    cand = [make_candidate(ref[0]), ref[1].clone(), ref[2] + 1e-6]
    cand[0][3, 5] = torch.inf
    whole = checks.compare(cand, ref, TOL)
    monkeypatch.setattr(checks, "COMPARE_CHUNK", 97)  # chunk edges inside rows and leaves
    chunked = checks.compare(cand, ref, TOL)
    for key in ("passed", "max_abs_err", "mismatched", "elements", "nonfinite_where_ref_finite", "poisoned",
                "reason"):
        assert chunked[key] == whole[key], key
    for key in ("rel_norm_err", "ref_norm", "cand_norm"):
        assert chunked[key] == pytest.approx(whole[key], rel=1e-12), key
    assert whole["elements"] == 301 * 77 + 1000 + 5


def test_compare_rel_norm_catches_zeros_on_near_zero_output():
    ref = torch.randn(128, 128) * 1e-3  # every |y| << 1e-2: an abs tolerance accepts zeros
    res = checks.compare([torch.zeros_like(ref)], [ref], TOL)
    assert res["max_abs_err"] < 1e-2
    assert not res["passed"] and res["rel_norm_err"] == pytest.approx(1.0)
    assert "relative norm" in res["reason"]


def test_compare_counts_poison_and_nonfinite():
    ref = torch.randn(100)
    bad = ref.clone()
    bad[:10] = float("nan")
    res = checks.compare([bad], [ref], TOL)
    assert not res["passed"] and res["nonfinite_where_ref_finite"] == 10 and res["poisoned"] == 10


def test_compare_localised_error_fails_even_when_norm_is_small():
    ref = torch.randn(1000, 1000)
    out = ref.clone()
    out[3, 7] += 0.5
    res = checks.compare([out], [ref], TOL)
    assert res["rel_norm_err"] < 1e-3 and not res["passed"] and res["mismatched"] == 1


def test_compare_shape_and_count_mismatch():
    assert not checks.compare([torch.zeros(3)], [torch.zeros(4)], TOL)["passed"]
    assert not checks.compare([torch.zeros(3), torch.zeros(3)], [torch.zeros(3)], TOL)["passed"]


class Sub(torch.Tensor):
    pass


def test_structure_subclass_alias_and_dtype():
    x = torch.randn(8, 8)
    ref = torch.relu(x)
    names = lambda found: {f["name"] for f in found}  # noqa: E731
    assert names(checks.structure_findings([x.relu()], [ref], [x], "cpu")) == set()
    assert "output_not_plain_tensor" in names(checks.structure_findings([ref.as_subclass(Sub)], [ref], [x], "cpu"))
    assert "output_aliases_input" in names(checks.structure_findings([x.view(64)[:64].view(8, 8)], [ref], [x], "cpu"))
    assert "output_structure_mismatch" in names(checks.structure_findings([ref.double()], [ref], [x], "cpu"))
    assert "output_overlapping_memory" in names(
        checks.structure_findings([torch.zeros(1, 8).expand(8, 8)], [ref], [x], "cpu"))


def test_task_weakness_thresholds():
    small = torch.randn(3, 1000, dtype=torch.float64) * 1e-3
    found = {f["name"] for f in checks.task_weakness(small)}
    assert found == {"near_zero_output", "input_insensitive"}
    assert checks.task_weakness(torch.randn(3, 1000, dtype=torch.float64)) == []


def test_constant_output_detects_a_candidate_that_ignores_inputs():
    ref = 0.5 + torch.randn(3, 500, dtype=torch.float64) * 2.5e-4
    const = torch.full((3, 500), 0.5, dtype=torch.float64)
    assert checks.constant_output(const, ref)["name"] == "constant_output"
    assert checks.constant_output(ref.clone(), ref) is None


def test_representable_fraction_and_tf32_rounding():
    x = torch.randn(1000)
    assert checks.representable_fraction(x.bfloat16().float(), torch.bfloat16) == 1.0
    assert checks.representable_fraction(x, torch.bfloat16) < 0.1
    t = checks.round_tf32(x)
    assert (t.view(torch.int32) & 0x1FFF).eq(0).all() and (t - x).abs().max() < 1e-3 * x.abs().max()


def test_guard_snapshot_sees_patches_and_setting_changes():
    before = guard.snapshot()
    real = time.perf_counter
    old_threads = torch.get_num_threads()
    try:
        time.perf_counter = lambda: 0.0
        torch.set_num_threads(max(1, old_threads + 1))
        changed = guard.changes(before, guard.snapshot())
    finally:
        time.perf_counter = real
        torch.set_num_threads(old_threads)
    assert "time.perf_counter" in changed
    assert any(c.startswith("torch.get_num_threads()") for c in changed)
    assert guard.changes(before, guard.snapshot()) == []


def test_op_recorder_and_library_verdict():
    a, b = torch.randn(16, 16), torch.randn(16, 16)
    with guard.OpRecorder() as ref_rec:
        torch.matmul(a, b)
    with guard.OpRecorder() as cand_rec:
        out = torch.empty(16, 16)
        out.copy_(a @ b)
    verdict = guard.library_verdict(ref_rec.counts, cand_rec.counts)
    assert verdict["heavy"] and verdict["all_reused"] and verdict["key_ops"] == ["mm"]
    with guard.OpRecorder() as glue_rec:
        torch.empty(16, 16).zero_()
    assert not guard.library_verdict(ref_rec.counts, glue_rec.counts)["all_reused"]


def test_op_recorder_loads_no_dynamo_and_wraps_its_handler_once_a_candidate_has():
    """In a fresh process (this one may have dynamo loaded by other tests): counting ops does not
    import torch._dynamo (over a second per runner), and once dynamo is there the handler is
    kept out of compiled regions as torch does it, and a compiled call is still counted."""
    import subprocess
    import sys
    from pathlib import Path

    script = (
        "import sys, torch\n"
        "from verifier.core import guard\n"
        "x = torch.randn(8)\n"
        "with guard.OpRecorder() as rec:\n"
        "    torch.relu(x)\n"
        "handler = lambda: guard.OpRecorder.__dict__['__torch_dispatch__']\n"
        "print(rec.counts.get('relu'), 'torch._dynamo' in sys.modules, hasattr(handler(), '__wrapped__'))\n"
        "compiled = torch.compile(lambda a: a.relu() + 1, backend='eager')\n"
        "with guard.OpRecorder() as rec:\n"
        "    out = compiled(x)\n"
        "print(rec.counts.get('relu'), torch.equal(out, x.relu() + 1), hasattr(handler(), '__wrapped__'))\n"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[:2] == ["1 False False", "1 True True"], done.stdout


CPP = r'''
#include <torch/extension.h>
// at::matmul(a, b) in a comment is not a finding
static torch::Tensor cache;
torch::Tensor forward(torch::Tensor a, torch::Tensor b) {
    try { return at::matmul(a, b); } catch (...) { return a; }
}
'''


def test_static_scan_cpp_findings_and_comment_stripping():
    flags, summary = static.scan(CPP, "cuda_forward", "cuda")
    names = {f["name"]: f for f in flags}
    assert {"library_ops_in_source", "fallback_path_in_source", "static_cache_in_source",
            "no_custom_kernel"} <= set(names)
    assert names["no_custom_kernel"]["blocking"] and not names["library_ops_in_source"]["blocking"]
    assert all("line 2" not in hit for hit in summary["library_ops"])  # the comment was stripped


def test_static_scan_kernel_source_is_not_library_call():
    src = "__global__ void k(float* x) {}\ntorch::Tensor forward(torch::Tensor x) { auto y = x.sum(); return y; }"
    names = {f["name"] for f in static.scan(src, "cuda_forward", "cuda")[0]}
    assert "no_custom_kernel" not in names and "library_ops_in_source" in names


def test_static_scan_python_patterns():
    src = (
        "import threading, time, torch\n"
        "# torch.compile( in a comment\n"
        "time.perf_counter = lambda: 0\n"
        "s = torch.cuda.Stream()\n"
        "class ModelNew:\n"
        "    def forward(self, x):\n"
        "        return torch.relu(x)\n"
    )
    names = {f["name"] for f in static.scan(src, "model_new", "cpu")[0]}
    assert {"monkeypatch_in_source", "threads_in_source", "side_stream_in_source", "library_ops_in_source",
            "no_custom_kernel"} <= names
    assert "torch_compile_in_source" not in names


def test_a_pytorch_only_model_new_calling_the_references_op_is_a_library_call():
    """Decided from text in the judge: a candidate that hides from the op recorder at run
    time still names the op in its source."""
    reference = "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return torch.softmax(x, dim=1)\n"
    hidden = ("import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n"
              "        if torch._C._len_torch_dispatch_stack():\n            e = (x - x.amax(1, keepdim=True)).exp()\n"
              "            return e / e.sum(1, keepdim=True)\n        return x.softmax(dim=1)\n")
    manual = ("import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n"
              "        e = (x - x.amax(1, keepdim=True)).exp()\n        return e / e.sum(1, keepdim=True)\n")
    flags, summary = static.scan(hidden, "model_new", "cpu", reference)
    assert [(f["name"], f["blocking"]) for f in flags if f["name"] == "no_custom_kernel"] == [("no_custom_kernel", True)]
    assert summary["reference_ops_called"] == ["softmax"]
    flags, _ = static.scan(manual, "model_new", "cpu", reference)
    assert [(f["name"], f["blocking"]) for f in flags if f["name"] == "no_custom_kernel"] == [("no_custom_kernel", False)]
    assert static.python_ops("y = F.conv2d(x, w)\nself.fc = nn.Linear(4, 4)\nz = x.relu_()\n") == {"conv2d", "linear", "relu"}


def test_reaching_into_the_process_is_blocking_and_real_kernels_do_not():
    attack = "import gc, torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n" \
             "        ref = [o for o in gc.get_objects() if type(o).__name__ == 'Model'][0]\n        return ref(x)\n"
    flags, summary = static.scan(attack, "model_new", "cpu")
    found = [f for f in flags if f["name"] == "process_interference_in_source"]
    assert found and found[0]["blocking"] and "gc.get_objects" in found[0]["evidence"]
    honest = ("#include <torch/extension.h>\n__global__ void k(float* o, const float* x, int n) {\n"
              "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) o[i] = x[i] > 0 ? x[i] : 0; }\n"
              "torch::Tensor forward(torch::Tensor x) { auto o = torch::empty_like(x); return o; }\n")
    assert not static.scan(honest, "cuda_forward", "cuda")[1]["process_interference_in_source"]
