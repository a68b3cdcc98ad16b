"""Screening's fast static scan (kernels/screening_scan.py) gives the harness's answer.

The import screens every kernel with the verifier's scan given screening_scan's finder:
the same patterns, each skipped only where a string all its matches contain is absent
(kernels/regex_prefilter.py), and one regex to blank comments. These tests hold the two to the
same (flags, summary) on every real source we have and on random text, and show screening
still raises its flags through the fast path (also where two kernels share one source)."""
import json
import random
import re
from pathlib import Path

import pytest

from kernels import regex_prefilter, screening_scan
from kernels.models import Kernel, Profile
from kernels.screening_services import kernel_screening_refresh
from tests.kernels.kernel_factories import make_kernel, make_task
from verifier.core import static_scan as harness

REPO = Path(__file__).resolve().parents[2]
CHEATS = REPO / "verifier" / "cheat_suite"


def _repo_sources():
    """(source, kind, reference) of the demo archive and the cheat suite's candidates."""
    rows = [json.loads(line) for line in (REPO / "evaluator" / "demo_archive" / "demo_archive.jsonl").open()]
    sources = [(r["CUDA_Code"], r.get("Kernel_Kind") or "cuda_forward", r["PyTorch_Code_Module"]) for r in rows]
    for path in sorted(CHEATS.rglob("*")):
        if path.suffix in (".py", ".cu", ".cpp"):
            text = path.read_text()
            sources += [(text, "model_new", None), (text, "cuda_forward", None)]
    return sources


def _same_scan(sources):
    for src, kind, reference in sources:
        for device in ("cuda", "cpu"):
            for ref in {None, reference}:
                assert screening_scan.scan(src, kind, device, ref) == harness.scan(src, kind, device, ref), (
                    src[:200], kind, device)


def test_fast_scan_is_the_harness_scan_on_the_demo_archive_and_cheat_suite():
    sources = _repo_sources()
    assert len(sources) > 100
    _same_scan(sources)


def test_fast_scan_is_the_harness_scan_on_the_shared_sample_and_cuda_l1(sample_rows, cuda_l1_sample_paths):
    sources = [(r["CUDA_Code"], "cuda_forward", r["PyTorch_Code_Module"]) for r in sample_rows]
    for path in cuda_l1_sample_paths.values():
        for row in map(json.loads, path.read_text().splitlines()):
            if row.get("custom_code"):
                sources.append((row["custom_code"], "model_new", row.get("ref_code")))
    _same_scan(sources)
    # The sample's level-3 kernels still call torch::linear: the finding screening turns into a flag.
    flags, summary = screening_scan.scan(sample_rows[-1]["CUDA_Code"], "cuda_forward", "cuda")
    assert flags == harness.scan(sample_rows[-1]["CUDA_Code"], "cuda_forward", "cuda")[0]


def test_comment_blanking_is_the_harness_loop_on_random_text():
    rng = random.Random(17)
    pieces = ["/", "*", '"', "'", "\\", "\n", "a", " ", "/*", "*/", "//", "x;"]
    for _ in range(20000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 40)))
        assert screening_scan.strip_cpp_comments(text) == harness.strip_cpp_comments(text), repr(text)


def test_fast_scan_is_the_harness_scan_on_random_sources():
    rng = random.Random(3)
    words = ["try {", "catch (", "static torch::Tensor t;", "std::thread", "torch::matmul(", "at::linear(",
             "x.sum(", "cublasSgemm(", "__global__ void k(", "for (", "// try {", "/* std::async */", '"catch ("',
             "torch.compile(", "global cache_x", "_cache = {", "id(x) in", "sys.modules[", "static int* p",
             "\n", " ", "\n    except:", "\ntry:", "time.perf_counter = f", "load_inline(", "\\", "'"]
    for _ in range(3000):
        src = "".join(rng.choice(words) for _ in range(rng.randint(0, 25)))
        for kind in ("cuda_forward", "model_new"):
            assert screening_scan.scan(src, kind, "cuda") == harness.scan(src, kind, "cuda"), (src, kind)


def test_a_pattern_ruled_out_has_no_match_and_literal_first_matches_the_same_spans():
    rng = random.Random(5)
    patterns = (harness._CPP_LIB, harness._CPP_METHOD, harness._VENDOR, harness._PY_LIB, harness._PY_METHOD,
                *[rx for _, regexes, _ in harness.PATTERNS for rx in regexes], *harness.INTERFERENCE[1])
    alphabet = ["try", "{", "(", "catch", " ", "\n", "static", "torch", "::", "Tensor", "x", ";", "at", "id",
                ")", "in", "==", "global", "cache", "=", ".", "sum", "matmul", "_", "thread", "std", "map", "<"]
    for _ in range(1500):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        for pattern in patterns:
            spans = [m.span() for m in re.finditer(pattern, text)]
            if not regex_prefilter.could_match(pattern, text):
                assert spans == [], (pattern, text)
            assert [m.span() for m in regex_prefilter.literal_first(pattern).finditer(text)] == spans
    assert regex_prefilter.literal_first(r"\btry\s*\{").pattern.startswith("try")
    assert regex_prefilter.required_clauses(r"\bcatch\s*\(") == (frozenset({"catch"}), frozenset({"("}))
    assert regex_prefilter.required_clauses(r"(?i)cache") == ()  # case folded: no condition, it always runs


@pytest.mark.django_db
def test_screening_flags_still_raised_and_shared_sources_keep_their_own_profile_flags():
    """Two kernels with one source (on two tasks): the source's flags on both, the torch
    profile's flag only on the kernel whose profile shows no kernel of its own ran."""
    code = ("#include <torch/extension.h>\n__global__ void scale_kernel(float* x) { x[0] *= 2; }\n"
            "torch::Tensor forward(torch::Tensor x) {\n  try {\n    scale_kernel<<<1, 1>>>(x.data_ptr<float>());\n"
            "  } catch (...) {}\n  return torch::matmul(x, x);\n}\n")
    first = make_kernel(make_task(1, 1), 0, code=code)
    second = make_kernel(make_task(1, 2), 0, code=code)
    honest = make_kernel(make_task(1, 3), 0)
    Profile.objects.create(kernel=second, kind="torch", raw_text="x", parsed={
        "ampere_sgemm_128x64_nn": {"cpu_time_total": 0.0, "device_time_total": 50.0}})
    assert kernel_screening_refresh(kernel_ids=[first.id, second.id, honest.id]) == 2
    names = {k.id: [f["name"] for f in k.screening_flags] for k in Kernel.objects.all()}
    assert names[first.id] == ["suspected_library_fallback", "suspected_library_call"]
    assert names[second.id] == names[first.id] + ["suspected_no_custom_kernel_ran"]
    assert names[honest.id] == [] and not Kernel.objects.get(id=honest.id).suspected
    fallback = Kernel.objects.get(id=first.id).screening_flags[0]
    assert "line 4: try {" in fallback["evidence"] and "torch::matmul" in Kernel.objects.get(
        id=first.id).screening_flags[1]["evidence"]
    # A kernel whose source changed is re-screened and its stale flags cleared.
    Kernel.objects.filter(id=first.id).update(code="__global__ void k(float* x) { x[0] = 1; }\n")
    kernel_screening_refresh(kernel_ids=[first.id])
    cleared = Kernel.objects.get(id=first.id)
    assert cleared.screening_flags == [] and not cleared.suspected
