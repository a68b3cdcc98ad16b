"""A small archive for worker tests: an honest C++ kernel (runs on the CPU) in the archive
schema, and KernelBench pairs that crash, hang, exhaust memory or run slowly."""
import json
from pathlib import Path

SUITE = Path(__file__).resolve().parents[2] / "verifier" / "cheat_suite"
RELU_REFERENCE = (SUITE / "tasks" / "relu.py").read_text()
HONEST_RELU_CPP = (SUITE / "candidates" / "honest_relu.cpp").read_text()

_MODEL_NEW = """import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
{body}
        return torch.where(x > 0, x, torch.zeros_like(x))
"""
BEHAVIOURS = {
    "crash": "        import ctypes\n        ctypes.string_at(0)  # dereference NULL: SIGSEGV",
    "hang": "        while True:\n            pass",
    "memory_hog": "        hog = [bytearray(1 << 30) for _ in range(64)]",
    "slow": "        import time\n        time.sleep(0.5)",
}


def archive_row(name: str, code: str) -> dict:
    return {
        "Op_Name": "1_ReLU", "Level_ID": 1, "Task_ID": 19, "Kernel_Name": name, "CUDA_Runtime": 0.02,
        "PyTorch_Native_Runtime": 0.03, "PyTorch_Compile_Runtime": 0.04, "CUDA_Speedup_Native": 1.5,
        "CUDA_Speedup_Compile": 2.0, "CUDA_Code": code, "PyTorch_Code_Module": RELU_REFERENCE, "Correct": True,
        "Max_Diff": 0.0, "Error": None, "NCU_Profile": None, "Clang_Tidy": None, "__index_level_0__": 0,
    }


def pair_row(name: str, behaviour: str) -> dict:
    return {"level_id": 1, "task_id": 19, "op_name": "1_ReLU", "ref_code": RELU_REFERENCE, "kernel_name": name,
            "custom_code": _MODEL_NEW.format(body=BEHAVIOURS[behaviour]), "correct": True}


def write_worker_archives(folder: Path, behaviours=("crash",)) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    archive = folder / "honest.jsonl"
    archive.write_text(json.dumps(archive_row("honest_relu_cpu", HONEST_RELU_CPP)) + "\n")
    pairs = folder / "pairs.jsonl"
    pairs.write_text("".join(json.dumps(pair_row(f"{b}_kernel", b)) + "\n" for b in behaviours))
    return archive, pairs


def write_pairs(path: Path, kernels: dict[str, str]) -> Path:
    """KernelBench pairs, one kernel per name -> behaviour. Each kernel's code starts with its name:
    the import dedupes by code, so several kernels of one behaviour need texts of their own."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = []
    for name, behaviour in kernels.items():
        row = pair_row(name, behaviour)
        rows.append(json.dumps(dict(row, custom_code=f"# {name}\n{row['custom_code']}")) + "\n")
    path.write_text("".join(rows))
    return path
