"""Guards on the process the candidate runs in.

* identity snapshots of timers, synchronisation, comparison and torch functions
  (and global torch settings) taken before and after the candidate loads and runs;
* thread census (Python threads and the OS threads of this process);
* a dispatcher recorder listing the aten ops a forward call issues, C++ callers
  included, to tell a custom kernel from a call of the reference's library op.

No Django imports here: this file ships inside the verification bundle.
"""
from __future__ import annotations

import builtins
import gc
import os
import signal
import sys
import threading
import time
import types

import torch

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing: no module only for annotations
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

_SETTINGS = [
    ("torch.backends.cuda.matmul.allow_tf32", lambda: torch.backends.cuda.matmul.allow_tf32),
    ("torch.backends.cudnn.allow_tf32", lambda: torch.backends.cudnn.allow_tf32),
    ("torch.backends.cudnn.enabled", lambda: torch.backends.cudnn.enabled),
    ("torch.get_float32_matmul_precision()", torch.get_float32_matmul_precision),
    ("torch.get_default_dtype()", torch.get_default_dtype),
    ("torch.get_num_threads()", torch.get_num_threads),
    ("torch.is_grad_enabled()", torch.is_grad_enabled),
    ("torch.are_deterministic_algorithms_enabled()", torch.are_deterministic_algorithms_enabled),
    ("torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction",
     lambda: torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction),
    ("sys.gettrace()", sys.gettrace),
    ("sys.getprofile()", sys.getprofile),
    ("torch function mode stack depth", lambda: torch._C._len_torch_function_stack()),
    ("torch dispatch mode stack depth", lambda: torch._C._len_torch_dispatch_stack()),
]

_TIME_NAMES = ["perf_counter", "perf_counter_ns", "time", "time_ns", "monotonic", "monotonic_ns",
               "process_time", "sleep"]
_CUDA_NAMES = ["synchronize", "Event", "Stream", "current_stream", "default_stream", "stream",
               "elapsed_time", "is_available", "memory_snapshot", "empty_cache"]


def _tensor_bases():
    bases = [torch.Tensor]
    for name in ("TensorBase", "_TensorBase"):
        base = getattr(torch._C, name, None)
        if base is not None:
            bases.append(base)
            break
    return bases


def snapshot(extra_namespaces: Sequence[tuple[str, Any]] = ()) -> dict[str, Any]:
    """Map 'qualified name' -> object (identity) or setting value."""
    snap = {}
    for name in _TIME_NAMES:
        snap["time." + name] = getattr(time, name, None)
    for key, val in vars(builtins).items():
        snap["builtins." + key] = val
    for label, ns in (("torch.", torch), ("torch.nn.functional.", torch.nn.functional),
                      ("torch.testing.", torch.testing), ("torch.nn.Module.", torch.nn.Module),
                      ("torch.Tensor.", torch.Tensor)):
        for key, val in list(vars(ns).items()):
            snap[label + key] = val
    for base in _tensor_bases()[1:]:
        for key, val in list(vars(base).items()):
            snap["torch._C.TensorBase." + key] = val
    for mod_name, mod in list(sys.modules.items()):
        # forward of every nn module class torch ships (a candidate could rewrite nn.Linear.forward)
        if mod_name.startswith("torch.nn.modules.") and mod is not None:
            for key, cls in list(vars(mod).items()):
                if isinstance(cls, type) and "forward" in vars(cls):
                    snap["%s.%s.forward" % (mod_name, key)] = vars(cls)["forward"]
    if hasattr(torch, "cuda"):
        for name in _CUDA_NAMES:
            snap["torch.cuda." + name] = getattr(torch.cuda, name, None)
        ev = getattr(torch.cuda, "Event", None)
        if ev is not None:
            for name in ("record", "elapsed_time", "synchronize", "query", "wait", "__init__", "__new__"):
                snap["torch.cuda.Event." + name] = vars(ev).get(name, getattr(ev, name, None))
    for label, ns in extra_namespaces:
        for key, val in list(vars(ns).items()):
            if not key.startswith("__"):
                snap[label + "." + key] = val
                if isinstance(val, types.FunctionType):  # a swapped __code__ keeps the function's identity
                    snap[label + "." + key + ".__code__"] = val.__code__
    snap.update(trigger_state(extra_namespaces))
    for label, getter in _SETTINGS:
        try:
            snap["setting:" + label] = ("value", getter())
        except Exception:
            pass
    return snap


_SIGNALS = [getattr(signal, name) for name in ("SIGALRM", "SIGVTALRM", "SIGPROF", "SIGUSR1", "SIGUSR2", "SIGCHLD",
                                               "SIGIO", "SIGPIPE", "SIGWINCH", "SIGURG") if hasattr(signal, name)]
_TIMERS = [getattr(signal, name) for name in ("ITIMER_REAL", "ITIMER_VIRTUAL", "ITIMER_PROF") if hasattr(signal, name)]


def trigger_state(namespaces: Sequence[tuple[str, Any]] = ()) -> dict[str, tuple[str, Any]]:
    """Everything that makes code run when the harness does something, as settings: sys.monitoring's
    tools with their global events and their local events on the harness's own code, gc
    callbacks, thread trace and profile hooks, import hooks, signal handlers and interval timers.
    A kernel could hang its early work on any of them (docs/harness.md, Threat model)."""
    state = {"gc.callbacks": tuple(gc.callbacks), "sys.meta_path": tuple(sys.meta_path),
             "sys.path_hooks": tuple(sys.path_hooks),
             "threading profile and trace hooks": (getattr(threading, "_profile_hook", None),
                                                   getattr(threading, "_trace_hook", None))}
    for sig in _SIGNALS:
        state["signal handler %d" % sig] = signal.getsignal(sig)
    for timer in _TIMERS:
        state["interval timer %d armed" % timer] = signal.getitimer(timer) != (0.0, 0.0)
    monitoring = getattr(sys, "monitoring", None)  # Python 3.12+
    if monitoring is not None:
        codes = [val.__code__ for _, ns in namespaces for val in list(vars(ns).values())
                 if isinstance(val, types.FunctionType)]
        for tool in range(6):
            name = monitoring.get_tool(tool)
            local = () if name is None else tuple(sorted(
                (code.co_qualname, events) for code in codes
                if (events := monitoring.get_local_events(tool, code))))
            state["sys.monitoring tool %d" % tool] = (name, monitoring.get_events(tool), local)
    return {"setting:" + key: ("value", value) for key, value in state.items()}


def changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Names whose object identity or setting value changed (new names are ignored)."""
    changed = []
    for key, old in before.items():
        if key not in after:
            changed.append(key + " (removed)")
            continue
        new = after[key]
        if isinstance(old, tuple) and old[:1] == ("value",):
            if old != new:
                changed.append("%s: %r -> %r" % (key[len("setting:"):], old[1], new[1] if isinstance(new, tuple)
                                                  else new))
        elif new is not old:
            changed.append(key)
    return changed


def thread_census() -> dict[str, Any]:
    py = {t.ident for t in threading.enumerate()}
    try:
        os_threads = len(os.listdir("/proc/self/task"))
    except OSError:
        os_threads = None
    return {"python": py, "os": os_threads}


def new_threads(before: dict[str, Any], after: dict[str, Any]) -> tuple[int, int | None]:
    """(new python threads, os thread delta) between two censuses."""
    py_new = len(after["python"] - before["python"])
    os_delta = None
    if before["os"] is not None and after["os"] is not None:
        os_delta = after["os"] - before["os"]
    return py_new, os_delta


try:
    from torch.utils._python_dispatch import TorchDispatchMode
except ImportError:  # very old torch
    TorchDispatchMode = None


if TorchDispatchMode is not None:
    class OpRecorder(TorchDispatchMode):
        """Counts aten ops by name (``mm``, ``convolution``...) issued inside the block."""

        @classmethod
        def _should_skip_dynamo(cls):
            # torch wraps a mode's handler in dynamo.disable so that a compiled region does not
            # trace into it; the wrapper imports torch._dynamo at the first op (over a second of
            # CPU per runner). Without dynamo loaded no region can be compiling, so the wrapper
            # would change nothing: it is asked for only when dynamo is there already (a candidate
            # that compiles), checked when the class is made and each time it is entered.
            return "torch._dynamo" in sys.modules

        def __init__(self) -> None:
            super().__init__()
            self.counts = {}

        def __enter__(self):
            cls = type(self)
            handler = cls.__dict__["__torch_dispatch__"]
            if cls._should_skip_dynamo() and not hasattr(handler, "__wrapped__"):
                # dynamo came after the class was made: wrap the handler now, as torch would have
                cls.__torch_dispatch__ = torch._disable_dynamo(handler, recursive=True)
            return super().__enter__()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = getattr(func, "__name__", str(func)).split(".")[0]
            self.counts[name] = self.counts.get(name, 0) + 1
            return func(*args, **(kwargs or {}))
else:
    OpRecorder = None

# Ops that only allocate, copy, view or describe memory: glue, not compute.
NON_COMPUTE = {
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like",
    "new_zeros", "ones", "ones_like", "new_ones", "full", "full_like", "new_full", "fill", "fill_", "zero_",
    "copy", "copy_", "clone", "_to_copy", "to", "view", "_unsafe_view", "reshape", "_reshape_alias", "expand",
    "as_strided", "contiguous", "t", "transpose", "permute", "squeeze", "unsqueeze", "select", "slice",
    "alias", "detach", "lift_fresh", "lift_fresh_copy", "resize_", "set_", "item", "_local_scalar_dense",
    "split", "split_with_sizes", "unbind", "narrow", "flatten", "unflatten", "view_as", "expand_as",
    "arange", "scalar_tensor", "randn", "rand", "normal_", "uniform_", "is_nonzero", "stride", "size",
    "numel", "dim", "sym_size", "sym_stride", "sym_numel", "_assert_async", "record_stream",
}
# The ops that carry the arithmetic of most KernelBench tasks.
HEAVY = {
    "mm", "bmm", "addmm", "baddbmm", "addbmm", "addmv", "mv", "dot", "matmul", "linear", "convolution",
    "_convolution", "conv1d", "conv2d", "conv3d", "cudnn_convolution", "mkldnn_convolution",
    "convolution_overrideable", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "cudnn_convolution_transpose", "_slow_conv2d_forward", "slow_conv3d_forward", "_mkldnn_linear",
    "mkldnn_linear", "_scaled_dot_product_attention_math", "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention",
    "_scaled_dot_product_flash_attention_for_cpu", "lstm", "gru", "rnn_tanh", "rnn_relu", "_cudnn_rnn",
    "_thnn_fused_lstm_cell", "einsum", "tensordot", "_int_mm",
}


def compute_ops(counts: dict[str, int]) -> dict[str, int]:
    return {k: v for k, v in counts.items() if k not in NON_COMPUTE}


def library_verdict(ref_counts: dict[str, int], cand_counts: dict[str, int]) -> dict[str, Any]:
    """Does the candidate issue the reference's own (heavy) ops through the library?"""
    ref_compute = compute_ops(ref_counts)
    cand_compute = compute_ops(cand_counts)
    ref_heavy = {k for k in ref_compute if k in HEAVY}
    key_ops = ref_heavy or set(ref_compute)
    reused = sorted(k for k in key_ops if k in cand_compute)
    return {
        "reference_ops": ref_compute,
        "candidate_ops": cand_compute,
        "key_ops": sorted(key_ops),
        "reused": reused,
        "all_reused": bool(key_ops) and len(reused) == len(key_ops),
        "heavy": bool(ref_heavy),
    }
