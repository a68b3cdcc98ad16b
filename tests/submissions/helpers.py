"""Tasks, users and kernels the submissions tests share: the cheat suite's ReLU task and its
honest CPU kernel (C++ only, so the CPU judge runs it), and small hostile sources."""
import pytest
from django.contrib.auth.models import User

from kernels.models import Task
from tests.evaluator.worker_archive import HONEST_RELU_CPP, RELU_REFERENCE

MODEL_NEW = """import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.clamp(x, min=0.0)  # {tag}
"""
# Returns zeros: wrong for every input with a positive element; the judge fails it.
ZEROS_MODEL_NEW = """import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.zeros_like(x)
"""
HOSTILE_MARKUP = "</textarea><script>alert('owned')</script>"


def model_new(tag: str = "a") -> str:
    """A valid model_new source; a different `tag` is different code (a new kernel)."""
    return MODEL_NEW.format(tag=tag)


def relu_task() -> Task:
    # The cheat suite's task, as the worker tests use it; level 1 task 19 is ReLU in KernelBench.
    return Task.objects.create(level=1, task_number=19, op_name="19_ReLU", reference_code=RELU_REFERENCE)


def researcher(name: str) -> User:
    # No password: the tests sign in with force_login, so no password is hashed (2 shared cores).
    return User.objects.create_user(name, email=f"{name}@example.org")


@pytest.fixture
def task(db):
    return relu_task()


@pytest.fixture
def ada(db):
    return researcher("ada")


@pytest.fixture
def bob(db):
    return researcher("bob")


__all__ = ["HONEST_RELU_CPP", "HOSTILE_MARKUP", "ZEROS_MODEL_NEW", "model_new", "relu_task", "researcher"]
