"""Small builders of tasks, kernels, profiles and verifications for page and API tests."""
import hashlib

from django.utils import timezone

from kernels.models import Kernel, Profile, Task, Verification
from evaluator.services import kernel_verification_state_refresh
from kernels.techniques import detect_techniques, encode_tags

REFERENCE = (
    "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def forward(self, A, B):\n"
    "        return torch.matmul(A, B)\n\ndef get_inputs():\n    return [torch.randn(8, 8), torch.randn(8, 8)]\n\n"
    "def get_init_inputs():\n    return []\n"
)
NCU_PARSED = {
    "metrics": {
        "SM Busy": {"unit": "%", "avg_value": 42.7, "variance": 0.0001, "n": 5},
        "Mem Busy": {"unit": "%", "avg_value": 89.9, "variance": 0.003, "n": 5},
        "Memory Throughput": {"unit": "byte/second", "avg_value": 2.1e10, "variance": 1e15, "n": 5},
        "Theoretical Occupancy": {"unit": "%", "avg_value": 100.0, "variance": 0.0, "n": 5},
        "Achieved Occupancy": {"unit": "%", "avg_value": 98.4, "variance": 0.0002, "n": 5},
        "Warp Cycles Per Issued Instruction": {"unit": "cycle", "avg_value": 36.8, "variance": 0.0003, "n": 5},
    },
    "rules": {
        "HighPipeUtilization": {"type": "WRN", "description": "All compute pipelines are under-utilized."},
        "Occupancy": {"type": "INF", "description": "Occupancy is not limited by any block limit."},
    },
}
CLANG_TIDY_PARSED = {
    "stdout": "/x/experiments/e1/level_1/task_1/base.cu:3:5: warning: macro argument should be enclosed "
              "in parentheses [bugprone-macro-parentheses]\n    3 | #define X(a) a\n      |     ^\n",
    "stderr": "", "errored": False,
}
TORCH_PARSED = {
    "matmul_kernel": {"cpu_time_total": 10.0, "device_time_total": 400.0, "calls": 1},
    "cudaLaunchKernel": {"cpu_time_total": 8.0, "device_time_total": 0.0, "calls": 1},
}
CUDA_CODE = (
    "#include <torch/extension.h>\n__global__ void k(const float* a, float* b) {\n"
    "  __shared__ float tile[32];\n  b[threadIdx.x] = a[threadIdx.x];\n}\n"
    "torch::Tensor forward(torch::Tensor a) { return a; }\n"
)


def make_task(level=1, number=1, op_name=None, **fields) -> Task:
    return Task.objects.create(level=level, task_number=number, op_name=op_name or f"{number}_Op_level{level}",
                               reference_code=fields.pop("reference_code", REFERENCE), **fields)


def make_kernel(task, index=0, *, code=None, correct=True, speedup=1.5, runtime=0.2, **fields) -> Kernel:
    code = code if code is not None else CUDA_CODE.replace("tile[32]", f"tile[{32 + index}]")
    values = dict(
        name=f"kernel_{task.level}_{task.task_number}_{index}", kind=Kernel.Kind.CUDA_FORWARD,
        source_archive="test", hardware="NVIDIA H100", claimed_correct=correct,
        claimed_speedup_native=speedup if correct else 0.0, claimed_speedup_compile=(speedup * 0.8) if correct else 0.0,
        claimed_runtime_ms=runtime if correct else None, claimed_native_runtime_ms=0.3,
        claimed_compile_runtime_ms=0.25, claimed_max_diff=1e-4 if correct else None,
        technique_tags=encode_tags(detect_techniques(code)),
    )
    values.update(fields)
    return Kernel.objects.create(task=task, code=code, code_sha256=hashlib.sha256(code.encode()).hexdigest(), **values)


def add_profiles(kernel, *, ncu=NCU_PARSED, clang_tidy=CLANG_TIDY_PARSED, torch=TORCH_PARSED):
    for kind, parsed in ((Profile.Kind.NCU, ncu), (Profile.Kind.CLANG_TIDY, clang_tidy), (Profile.Kind.TORCH, torch)):
        if parsed is not None:
            Profile.objects.create(kernel=kernel, kind=kind, raw_text=repr(parsed), parsed=parsed)


def make_verification(kernel, *, status=Verification.Status.PASSED, flags=(), speedup_eager=1.2,
                      phases=None) -> Verification:
    # As the worker does: store the finished run, then refresh the kernel's verified state.
    run = Verification.objects.create(kernel=kernel, status=status, flags=list(flags), gpu_name="NVIDIA H200",
                                      speedup_eager=speedup_eager, speedup_compile=1.0, runtime_ms=0.25,
                                      finished_at=timezone.now(), phases=phases or {})
    kernel_verification_state_refresh(kernel_id=kernel.id)
    kernel.refresh_from_db()
    return run


def make_archive(tasks=3, kernels_per_task=2, *, with_profiles=False, verify_every=0) -> list[Kernel]:
    """Tasks over levels 1-3, each with kernels of decreasing speedup; the last kernel of a
    task is incorrect when the task has more than one."""
    made = []
    for number in range(1, tasks + 1):
        task = make_task(level=1 + (number - 1) % 3, number=number)
        for index in range(kernels_per_task):
            correct = index < kernels_per_task - 1 or kernels_per_task == 1
            kernel = make_kernel(task, index, correct=correct, speedup=2.0 - 0.1 * index, runtime=0.1 + 0.01 * index)
            if with_profiles:
                add_profiles(kernel)
            if verify_every and len(made) % verify_every == 0:
                make_verification(kernel)
            made.append(kernel)
    return made
