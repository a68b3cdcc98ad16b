"""The judge's precompiled torch/extension.h (verifier/core/build_pch.py): a CPU build that has to
compile uses it, GCC accepts it (no "not used because" in the build log), and it lives where
the runner may not write. And a build lock left by a killed build (or planted) does not stall
the next build of that source (verifier/core/build.py, exclusive_build)."""
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from verifier.core import build, build_pch, environ_names

ROOT = Path(__file__).resolve().parents[2]

TASK = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(64, 256)]


def get_init_inputs():
    return []
'''

KERNEL = '''#include <torch/extension.h>

torch::Tensor forward(torch::Tensor x) {
    auto out = torch::empty_like(x);
    const float* in = x.data_ptr<float>();
    float* o = out.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) o[i] = in[i] > 0.f ? in[i] : 0.f;
    return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward); }
'''


@pytest.mark.slow
def test_a_cpu_build_uses_the_judges_precompiled_header_past_a_stale_lock(tmp_path, harness_build_dir):
    task, kernel = tmp_path / "task.py", tmp_path / "kernel.cpp"
    task.write_text(TASK)
    source = KERNEL + "// %s: a source no cache holds, so it is compiled now\n" % uuid.uuid4()
    kernel.write_text(source)
    stale = Path(harness_build_dir) / build.extension_name(source, "cpu") / "lock"
    stale.parent.mkdir(parents=True)
    stale.touch()  # what torch's build leaves when it is killed half-way: before, the next build waited for ever
    argv = [sys.executable, "-m", "verifier.core.judge", "--reference", str(task), "--candidate", str(kernel), "--kind",
            "cuda_forward", "--device", "cpu", "--no-timing", "--build-dir", harness_build_dir, "--runner-timeout", "600"]
    doc = json.loads(subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=900).stdout)
    assert doc["verdict"] == "passed", (doc.get("error"), doc["flags"])
    header = doc["checks"]["build"]["precompiled_header"]
    assert header.startswith(build_pch.pch_dir_for(harness_build_dir) + os.sep)
    assert os.path.exists(header + ".gch")
    assert "-include %s" % header in doc["log"]  # the compile line the runner ran
    assert "not used because" not in doc["log"]  # -Winvalid-pch: GCC took the .gch
    assert "precompiled_header" in doc["checks"]["phases"]
    # the next run finds the build cached: the same command, so ninja has nothing to do
    again = json.loads(subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=900).stdout)
    assert again["verdict"] == "passed" and again["checks"]["build"]["precompiled_header"] == header
    assert "no work to do" in again["log"] and "c++ -MMD" not in again["log"]


def test_the_precompiled_header_is_outside_what_the_runner_may_write(tmp_path, monkeypatch):
    build_dir = str(tmp_path / "builds")
    for name in environ_names("VERIFIER_PCH_DIR"):
        monkeypatch.delenv(name, raising=False)
    pch = build_pch.pch_dir_for(build_dir)
    # the runner's landlock rules allow writes beneath its scratch folder and the build folder
    assert not (pch + os.sep).startswith(os.path.abspath(build_dir) + os.sep)
    assert os.path.dirname(pch) == str(tmp_path)
    # one folder for many build caches (the test session's), but never one inside a build cache
    monkeypatch.setenv("VERIFIER_PCH_DIR", str(tmp_path / "shared-pch"))
    assert build_pch.pch_dir_for(build_dir) == str(tmp_path / "shared-pch")
    for overlapping in (build_dir, build_dir + "/pch", str(tmp_path)):
        monkeypatch.setenv("VERIFIER_PCH_DIR", overlapping)
        assert build_pch.pch_dir_for(build_dir) == pch, overlapping


def test_the_flags_are_load_inlines_for_a_cpu_extension():
    flags = build_pch.compile_flags(["-O3"])
    assert flags[0] == "-DTORCH_API_INCLUDE_EXTENSION_H" and flags[-1] == "-O3"
    assert any(f.startswith("-std=c++") for f in flags) and "-fPIC" in flags
    assert build_pch.include_flags(None) == []
    assert build_pch.include_flags("/x/torch_extension.h") == ["-include", "/x/torch_extension.h", "-Winvalid-pch"]
