"""Verification bundles: reproducible bytes, fixed contents, and a bundle that really runs.

The last tests extract a bundle into a fresh folder and run its verify.py with a fresh
interpreter, as a user who downloaded it would: first against a stub judge (to pin
verify.py's side of the CLI contract), then against the real judge and runner.
"""
import io
import json
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from verifier.bundle import bundle_files, bundle_sha256, build_bundle
from verifier.core import shipped_files

REPO_ROOT = Path(__file__).resolve().parents[2]
VERIFIER_DIR = REPO_ROOT / "verifier"

REFERENCE = textwrap.dedent(
    '''
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        """y = relu(x) * scale: an elementwise task with one weight, small enough for CPU CI."""

        def __init__(self, features):
            super().__init__()
            self.scale = nn.Parameter(torch.randn(features))

        def forward(self, x):
            return torch.relu(x) * self.scale


    batch_size = 64
    features = 256


    def get_inputs():
        return [torch.randn(batch_size, features)]


    def get_init_inputs():
        return [features]
    '''
)

FUNCTIONAL = textwrap.dedent(
    '''
    import torch
    import torch.nn as nn


    def module_fn(x, scale):
        return torch.relu(x) * scale


    class Model(nn.Module):
        def __init__(self, features):
            super().__init__()
            self.scale = nn.Parameter(torch.randn(features))

        def forward(self, x, fn=module_fn):
            return fn(x, self.scale)


    batch_size = 64
    features = 256


    def get_inputs():
        return [torch.randn(batch_size, features)]


    def get_init_inputs():
        return [features]
    '''
)

# C++ only, so load_inline(cpp_sources=...) builds it and it runs on the CPU.
KERNEL_TEMPLATE = textwrap.dedent(
    """
    #include <torch/extension.h>

    torch::Tensor forward(torch::Tensor x, torch::Tensor scale) {
        TORCH_CHECK(x.dim() == 2 && scale.dim() == 1 && x.size(1) == scale.size(0), "shape mismatch");
        auto input = x.contiguous();
        auto weights = scale.contiguous();
        auto out = torch::empty_like(input);
        const float* in = input.data_ptr<float>();
        const float* w = weights.data_ptr<float>();
        float* o = out.data_ptr<float>();
        const int64_t features = input.size(1);
        for (int64_t i = 0; i < input.numel(); ++i) {
            const float v = in[i] > 0.f ? in[i] : 0.f;
            o[i] = BODY;
        }
        return out;
    }

    PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
        m.def("forward", &forward, "relu(x) * scale");
    }
    """
)
HONEST_KERNEL = KERNEL_TEMPLATE.replace("BODY", "v * w[i % features]")
# An off-by-one a generated kernel could well make: the last feature column is dropped.
BROKEN_KERNEL = KERNEL_TEMPLATE.replace("BODY", "(i % features == features - 1) ? 0.f : v * w[i % features]")

TASK = {
    "level": 9,
    "task_number": 1,
    "op_name": "1_ReLU_Scale",
    "reference_code": REFERENCE,
    "functional_code": FUNCTIONAL,
}
CLAIMED = {
    "runtime_ms": 0.01,
    "native_runtime_ms": 0.02,
    "compile_runtime_ms": 0.03,
    "speedup_native": 2.0,
    "speedup_compile": 3.0,
    "correct": True,
    "max_diff": 0.0,
    "hardware": "NVIDIA H100 80GB HBM3",
    "source_archive": "sakana-ai-cuda-engineer-archive",
}


def kernel(code=HONEST_KERNEL, name="relu_scale_loop"):
    return {"name": name, "kind": "cuda_forward", "code": code}


# What the repository's verifier ships: its __init__.py and every module of verifier/core/.
SHIPPED = shipped_files(str(VERIFIER_DIR))


def test_what_ships_is_the_core_package_found_by_listing_it():
    core = sorted(f"core/{path.name}" for path in (VERIFIER_DIR / "core").glob("*.py"))
    assert SHIPPED == sorted(["__init__.py", *core]) and "core/judge.py" in SHIPPED and "core/runner.py" in SHIPPED
    assert "bundle.py" not in SHIPPED and not [name for name in SHIPPED if name.count("/") > 1]


@pytest.fixture
def fake_harness_dir(tmp_path):
    folder = tmp_path / "verifier_src"
    (folder / "core").mkdir(parents=True)
    for name in SHIPPED:
        (folder / name).write_text(f"print({name!r})\n")
    (folder / "not_shipped.py").write_text("print('ignored')\n")  # the site's tooling beside core/
    (folder / "core" / "notes.txt").write_text("not a module\n")
    return folder


def test_same_inputs_give_the_same_bytes(fake_harness_dir):
    first = build_bundle(kernel=kernel(), task=TASK, claimed=CLAIMED, verifier_dir=fake_harness_dir)
    second = build_bundle(kernel=kernel(), task=dict(TASK), claimed=dict(CLAIMED), verifier_dir=fake_harness_dir)
    assert bundle_sha256(first) == bundle_sha256(second)
    assert len(bundle_sha256(first)) == 64
    changed = build_bundle(kernel=kernel(BROKEN_KERNEL), task=TASK, claimed=CLAIMED, verifier_dir=fake_harness_dir)
    assert bundle_sha256(changed) != bundle_sha256(first)
    (fake_harness_dir / "core" / "timing.py").write_text("print('timing v2')\n")
    new_harness = build_bundle(kernel=kernel(), task=TASK, claimed=CLAIMED, verifier_dir=fake_harness_dir)
    assert bundle_sha256(new_harness) != bundle_sha256(first)


def test_contents_and_fixed_metadata(fake_harness_dir, tmp_path):
    data = build_bundle(kernel=kernel(), task=TASK, claimed=CLAIMED, verifier_dir=fake_harness_dir)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        infos = archive.infolist()
        assert [info.filename for info in infos] == [
            "README.md", "SHA256SUMS", "claims.json", "functional.py", "kernel.cu", "reference.py",
            *(f"verifier/{name}" for name in SHIPPED), "verify.py",
        ]
        assert {info.date_time for info in infos} == {(1980, 1, 1, 0, 0, 0)}
        assert {info.compress_type for info in infos} == {zipfile.ZIP_STORED}
        assert archive.read("kernel.cu").decode() == HONEST_KERNEL
        assert archive.read("reference.py").decode() == REFERENCE
        assert archive.read("verify.py") == (VERIFIER_DIR / "bundle_script.py").read_bytes()
        claims = json.loads(archive.read("claims.json"))
        archive.extractall(tmp_path / "out")
    assert claims["kernel"] == {"name": "relu_scale_loop", "kind": "cuda_forward", "file": "kernel.cu"}
    assert claims["task"] == {"level": 9, "task_number": 1, "op_name": "1_ReLU_Scale"}
    assert claims["claimed"]["speedup_native"] == 2.0 and claims["claimed"]["error"] is None
    check = subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=tmp_path / "out", capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


def test_model_new_kernels_and_known_functional_forms(fake_harness_dir):
    files = bundle_files(
        kernel={"name": "n", "kind": "model_new", "code": "class ModelNew: pass\n"},
        task={"level": 2, "task_number": 1, "op_name": "1_Conv2D_ReLU_BiasAdd", "reference_code": REFERENCE,
              "functional_code": ""},
        claimed={"claimed_runtime_ms": float("nan"), "claimed_correct": False, "error_text": "boom"},
        verifier_dir=fake_harness_dir,
    )
    assert "model_new.py" in files and "kernel.cu" not in files
    assert b"1_Conv2D_ReLU_BiasAdd" in files["functional.py"]  # filled in from verifier.functional_forms
    claims = json.loads(files["claims.json"])
    assert claims["claimed"]["runtime_ms"] is None and claims["claimed"]["error"] == "boom"
    no_form = bundle_files(kernel=kernel(), task={**TASK, "functional_code": ""}, claimed={}, verifier_dir=fake_harness_dir)
    assert "functional.py" not in no_form


def test_bad_inputs_are_refused(fake_harness_dir, tmp_path):
    with pytest.raises(ValueError, match="kernel kind"):
        build_bundle(kernel={**kernel(), "kind": "../../etc"}, task=TASK, claimed={}, verifier_dir=fake_harness_dir)
    with pytest.raises(ValueError, match="kernel code is empty"):
        build_bundle(kernel={**kernel(), "code": " "}, task=TASK, claimed={}, verifier_dir=fake_harness_dir)
    with pytest.raises(ValueError, match="unknown claimed field"):
        build_bundle(kernel=kernel(), task=TASK, claimed={"speedup": 9}, verifier_dir=fake_harness_dir)
    with pytest.raises(FileNotFoundError, match="lacks"):
        build_bundle(kernel=kernel(), task=TASK, claimed={}, verifier_dir=tmp_path)


def test_untrusted_names_stay_literal_in_the_readme(fake_harness_dir):
    hostile = "x```\n# Owned\n<script>alert(1)</script>`````"
    files = bundle_files(kernel=kernel(name=hostile), task=TASK, claimed=CLAIMED, verifier_dir=fake_harness_dir)
    readme = files["README.md"].decode()
    assert sorted(name for name in files if "Owned" in name or ("/" in name and not name.startswith("verifier/"))) == []
    fence = "``````"  # one longer than the longest backtick run in the name
    block_start = readme.index(fence + "text\n")
    block_end = readme.index("\n" + fence + "\n", block_start)
    assert "<script>alert(1)</script>" in readme[block_start:block_end]
    assert "\n# Owned" not in readme  # the newline was flattened, so no heading escapes
    assert "CC-BY-4.0" in readme and "AI CUDA Engineer" in readme


def run_verify(bundle: bytes, folder: Path, *extra: str) -> tuple[subprocess.CompletedProcess, dict]:
    """Extract into a fresh folder and run verify.py as a user would, outside the repo."""
    folder.mkdir()
    (folder / "bundle.zip").write_bytes(bundle)
    with zipfile.ZipFile(folder / "bundle.zip") as archive:
        archive.extractall(folder / "bundle")
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "DJANGO_SETTINGS_MODULE")}
    env["TORCH_EXTENSIONS_DIR"] = str(folder / "torch_extensions")
    completed = subprocess.run(
        [sys.executable, "verify.py", "--device", "cpu", "--json", "out.json", *extra],
        cwd=folder / "bundle", env=env, capture_output=True, text=True, timeout=1200,
    )
    result_path = folder / "bundle" / "out.json"
    result = json.loads(result_path.read_text()) if result_path.exists() else {}
    return completed, result


STUB_HARNESS = textwrap.dedent(
    """
    import argparse, json, sys
    parser = argparse.ArgumentParser()
    for option in ("--reference", "--candidate", "--functional", "--kind", "--device", "--seeds", "--json",
                   "--time-budget"):
        parser.add_argument(option)
    args = parser.parse_args()
    result = {
        "verdict": "passed" if "v * w" in open(args.candidate).read() else "failed",
        "flags": [{"name": "stub_flag", "blocking": False, "evidence": {"argv": sys.argv[1:]}}],
        "trials": [{"seed": 1, "max_abs_err": 1.5e-7}],
        "timings": {"candidate": {"median_ms": 0.5, "iqr_ms": 0.01, "n": 30},
                    "eager": {"median_ms": 0.25, "iqr_ms": 0.01, "n": 30},
                    "compile": {"median_ms": 1.0, "iqr_ms": 0.02, "n": 30}},
        "speedup": {"vs_eager": 0.5, "vs_compile": 2.0},
        "versions": {"harness": "stub", "torch": "x"},
    }
    open(args.json, "w").write(json.dumps(result))
    print(json.dumps(result))
    """
)


def stub_verifier(tmp_path):
    """The real shipped modules with judge.py replaced by a stub that records its arguments."""
    stub_dir = tmp_path / "stub"
    stub_dir.mkdir()
    (stub_dir / "core").mkdir()
    for name in SHIPPED:
        (stub_dir / name).write_bytes((VERIFIER_DIR / name).read_bytes())
    (stub_dir / "core" / "judge.py").write_text(STUB_HARNESS)
    return stub_dir


def test_verify_script_drives_the_harness_cli_contract(tmp_path):
    stub_dir = stub_verifier(tmp_path)
    bundle = build_bundle(kernel=kernel(), task=TASK, claimed=CLAIMED, verifier_dir=stub_dir)
    completed, result = run_verify(bundle, tmp_path / "run", "--seeds", "4,5", "--", "--time-budget", "7")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    argv = result["flags"][0]["evidence"]["argv"]
    options = dict(zip(argv[::2], argv[1::2]))
    assert Path(options["--reference"]).name == "reference.py"
    assert Path(options["--candidate"]).name == "kernel.cu"
    assert Path(options["--functional"]).name == "functional.py"
    assert (options["--kind"], options["--device"], options["--seeds"]) == ("cuda_forward", "cpu", "4,5")
    assert options["--time-budget"] == "7"  # passed through after "--"
    assert result["verdict"] == "passed" and result["bundle"]["files_intact"] is True
    assert result["claims"]["claimed"]["speedup_native"] == 2.0
    assert "Verdict: PASSED" in completed.stdout
    assert "[advisory] stub_flag" in completed.stdout
    speedup_line = next(line for line in completed.stdout.splitlines() if line.startswith("speedup vs eager"))
    assert speedup_line.split()[3:] == ["2", "0.5"]  # claimed, re-measured


def test_verify_script_reports_a_crashed_harness_and_edited_files(tmp_path):
    stub_dir = stub_verifier(tmp_path)
    bundle = build_bundle(kernel=kernel(), task=TASK, claimed=CLAIMED, verifier_dir=stub_dir)
    edited = tmp_path / "edited"
    edited.mkdir()
    with zipfile.ZipFile(io.BytesIO(bundle)) as archive:
        archive.extractall(edited)
    (edited / "verifier" / "core" / "judge.py").write_text("import sys; sys.exit(3)\n")
    crashed = subprocess.run([sys.executable, "verify.py", "--device", "cpu", "--json", "out.json"], cwd=edited,
                             capture_output=True, text=True, timeout=120)
    assert crashed.returncode == 2
    crash_result = json.loads((edited / "out.json").read_text())
    assert crash_result["verdict"] == "error" and crash_result["bundle"]["modified"] == ["verifier/core/judge.py"]


@pytest.mark.slow
def test_downloaded_bundle_runs_in_a_fresh_directory_on_cpu(tmp_path):
    honest = build_bundle(kernel=kernel(), task=TASK, claimed=CLAIMED, verifier_dir=VERIFIER_DIR)
    completed, result = run_verify(honest, tmp_path / "honest")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert result["verdict"] == "passed", json.dumps(result, indent=1)[:4000]
    assert not [flag for flag in result["flags"] if flag["blocking"]]
    assert "Verdict: PASSED" in completed.stdout

    broken = build_bundle(kernel=kernel(BROKEN_KERNEL), task=TASK, claimed=CLAIMED, verifier_dir=VERIFIER_DIR)
    completed, result = run_verify(broken, tmp_path / "broken")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert result["verdict"] == "failed", json.dumps(result, indent=1)[:4000]
    assert any(trial["passed"] is False for trial in result["trials"])
    assert "Verdict: FAILED" in completed.stdout


def test_worker_unpacks_only_the_bundles_own_names(tmp_path):
    from verifier.bundle_run import unpack_bundle

    good = build_bundle(kernel=kernel(), task=TASK, claimed=CLAIMED)
    unpack_bundle(good, tmp_path / "good")
    assert (tmp_path / "good" / "verifier" / "core" / "judge.py").is_file()
    assert (tmp_path / "good" / "verify.py").is_file()
    for name in ("../escape.py", "verifier/../../escape.py", "other/judge.py", ".hidden", "verifier/sub/x.py",
                 "/abs.py", "verifier/core/../../escape.py", "verifier/core/sub/x.py", "core/judge.py"):
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            archive.writestr("verify.py", "print(1)\n")
            archive.writestr(name, "print(2)\n")
        with pytest.raises(ValueError, match="unexpected file name"):
            unpack_bundle(buffer.getvalue(), tmp_path / "bad")
        assert not (tmp_path / "escape.py").exists()


# A CUDA kernel: a __global__ function the CPU cannot run (the judge's static_scan.needs_cuda rule).
CUDA_KERNEL = HONEST_KERNEL.replace(
    "#include <torch/extension.h>\n",
    "#include <torch/extension.h>\n\n"
    "__global__ void relu_scale_kernel(const float* x, float* y) { y[threadIdx.x] = x[threadIdx.x]; }\n",
)


def test_a_cuda_kernel_on_the_cpu_gets_one_message_and_no_contradiction(tmp_path):
    """`verify.py --device cpu` on CUDA code: verdict error, one line saying it needs a CUDA device
    and what was found here, and no "correct: False" that would read as a failed kernel."""
    bundle = build_bundle(kernel=kernel(CUDA_KERNEL, name="relu_scale_cuda"), task=TASK, claimed=CLAIMED,
                          verifier_dir=VERIFIER_DIR)
    completed, result = run_verify(bundle, tmp_path / "cuda_on_cpu")
    assert completed.returncode == 2, completed.stdout + completed.stderr
    lines = completed.stdout.splitlines()
    verdicts = [line for line in lines if line.startswith("Verdict:")]
    assert len(verdicts) == 1 and verdicts[0].startswith("Verdict: ERROR  (device: cpu): this kernel needs a CUDA "
                                                         "device: kernel.cu contains CUDA device code")
    found = result["checks"]["device"]["found"]
    assert found in verdicts[0] and ("CPU-only build" in found or "sees no CUDA device" in found
                                     or "--device cpu was given" in found)
    assert not [line for line in lines if line.lstrip().lower().startswith("correct")], completed.stdout
    assert "False" not in completed.stdout and "Running the harness" not in completed.stdout
    assert result["verdict"] == "error" and result["error"].startswith("this kernel needs a CUDA device")
    assert result["checks"]["device"]["needs_cuda"] is True and result["bundle"]["files_intact"] is True


def test_a_cpp_kernel_on_the_cpu_is_not_refused(tmp_path):
    """The refusal is for CUDA code only: the plain C++ kernel still reaches the judge (here a stub)."""
    bundle = build_bundle(kernel=kernel(), task=TASK, claimed=CLAIMED, verifier_dir=stub_verifier(tmp_path))
    completed, result = run_verify(bundle, tmp_path / "cpp_on_cpu")
    assert completed.returncode == 0 and result["verdict"] == "passed", completed.stdout + completed.stderr
    assert "device" not in (result.get("checks") or {}) and "Running the harness on cpu" in completed.stdout


def test_no_verdict_is_never_printed_as_incorrect():
    from verifier.bundle_script import comparison_rows

    def correct(verdict):
        return dict((label, measured) for label, _, measured in comparison_rows({}, {"verdict": verdict}))["correct"]

    assert (correct("passed"), correct("failed"), correct("error")) == ("True", "False", "- (no verdict)")
