"""What the worker tests run a bundle with when its sandboxed steps are replaced by recorders (no
build, no GPU): a one-kernel identity bundle, and a timeline of when each recorded step ran and on
which thread (test_worker_overlap.py, test_worker_cpu_jobs.py, test_worker_priority.py)."""
import threading
import time

from verifier.bundle import build_bundle

REFERENCE = "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
CANDIDATE = "__global__ void k() {}\ntorch::Tensor forward(torch::Tensor x) { return x; }\n"


class Timeline:
    """When each step started and ended, and on which thread."""

    def __init__(self):
        self.events, self.guard = {}, threading.Lock()

    def step(self, name, seconds, answer=None):
        with self.guard:
            self.events[name] = {"start": time.monotonic(), "thread": threading.current_thread().name}
        time.sleep(seconds)
        with self.guard:
            self.events[name]["end"] = time.monotonic()
        return answer


def identity_bundle():
    """A bundle of one CUDA kernel that returns its input, for level 1's task 1."""
    return build_bundle(kernel={"name": "k", "kind": "cuda_forward", "code": CANDIDATE},
                        task={"level": 1, "task_number": 1, "op_name": "1_Identity", "reference_code": REFERENCE,
                              "functional_code": ""}, claimed={})
