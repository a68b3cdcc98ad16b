"""An archive row whose every text field carries markup and script, imported the real way."""
import json

from kernels.services import archive_import_file

PAYLOAD = '<script>alert("xss")</script><img src=x onerror=alert(1)>'
MARKERS = ("<script>alert", "<img src=x")  # what must never reach a page unescaped
# A task number KernelBench has not got: the task catalog names the tasks it knows, and this
# task's name must be the archive's own hostile text.
TASK_URL = "/tasks/1/901/"


def hostile_row(*, name_suffix: str, correct: bool, code_extra: str = "") -> dict:
    ncu = {
        "metrics": {f"SM Busy {PAYLOAD}": {"unit": f"% {PAYLOAD}", "avg_value": 40.0, "variance": 0.0, "n": 5},
                    "Achieved Occupancy": {"unit": "%", "avg_value": 90.0, "variance": 0.0, "n": 5}},
        "rules": {f"Rule{PAYLOAD}": {"type": "WRN", "description": f"Under-utilised {PAYLOAD}"}},
    }
    tidy = {"stdout": f"/e/experiments/exp{PAYLOAD}/level_1/task_901/base.cu:2:1: warning: bad {PAYLOAD} "
                      f"[check-{PAYLOAD}]\n", "stderr": PAYLOAD, "errored": False}
    torch_profile = {f"event {PAYLOAD}": {"cpu_time_total": 1.0, "device_time_total": 2.0, "calls": 1}}
    return {
        "Op_Name": f"1_Op{PAYLOAD}", "Level_ID": 1, "Task_ID": 901, "Kernel_Name": f"k{name_suffix}{PAYLOAD}",
        "CUDA_Runtime": 0.2 if correct else None, "PyTorch_Native_Runtime": 0.3, "PyTorch_Compile_Runtime": 0.3,
        "CUDA_Speedup_Native": 1.5 if correct else 0.0, "CUDA_Speedup_Compile": 1.5 if correct else 0.0,
        "CUDA_Code": f"// {PAYLOAD}\n__global__ void k() {{}} /* </script>{PAYLOAD} */\n{code_extra}",
        "PyTorch_Code_Module": f"# {PAYLOAD}\nclass Model:\n    pass\n",
        "PyTorch_Code_Functional": f"# {PAYLOAD}\ndef module_fn(x):\n    return x\n",
        "Correct": correct, "Max_Diff": 0.0 if correct else None, "Error": None if correct else f"failed {PAYLOAD}",
        "NCU_Profile": repr(ncu), "Torch_Profile": repr(torch_profile), "Clang_Tidy": repr(tidy),
        "__index_level_0__": 0,
    }


def import_hostile_archive(tmp_path):
    path = tmp_path / "hostile.jsonl"
    rows = [hostile_row(name_suffix="good", correct=True), hostile_row(name_suffix="bad", correct=False, code_extra="//")]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return archive_import_file(path=path, hardware=f"GPU {PAYLOAD}")
