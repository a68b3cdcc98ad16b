"""Allocator poisoning: make reads of stale (freed) memory visible.

The classic cheat returns ``torch.empty_like(out)`` without writing it: under
KernelBench's ordering the caching allocator hands back the block that held the
reference's freely-released output, which already contains the right answer.
Before every candidate call the harness fills every free block the allocator is
holding with 0xFF bytes (NaN for every floating dtype, -1 for integers), so an
output that is never written reads as poison instead of as the reference.

CUDA: the caching allocator's inactive blocks are listed by
``torch.cuda.memory_snapshot()``; each is allocated, filled and released again.

CPU: PyTorch's CPU allocator is plain malloc, whose reuse of freed blocks is
erratic.  To exercise the same defence in CI the harness installs a small caching
CPU allocator (exact-size reuse in 512-byte classes, like the CUDA one) built
from ``CPU_ALLOC_SRC`` with ``load_inline``; its ``poison()`` fills every cached
free block.  When it cannot be built the harness falls back to allocating and
poisoning blocks of the expected output sizes (best effort) and says so.
No Django imports here: this file ships inside the verification bundle.
"""
from __future__ import annotations

import hashlib
import os
from typing import TYPE_CHECKING

import torch

from . import build
from . import environ_get

if TYPE_CHECKING:
    from typing import Any, Iterable

POISON_BYTE = 0xFF

CPU_ALLOC_SRC = r"""
#include <torch/extension.h>
#include <c10/core/CPUAllocator.h>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace {
struct Cache {
  std::mutex mu;
  std::unordered_map<size_t, std::vector<void*>> free_blocks;
  std::unordered_map<void*, size_t> sizes;
  size_t cached_bytes = 0;
  size_t reused = 0;
  size_t fresh = 0;
};
// Leaked on purpose: tensors may be freed during static destruction.
Cache& cache() { static Cache* c = new Cache(); return *c; }

size_t round_size(size_t n) { return n < 512 ? 512 : (n + 511) & ~static_cast<size_t>(511); }

void cached_free(void* p) {
  if (p == nullptr) return;
  Cache& c = cache();
  std::lock_guard<std::mutex> g(c.mu);
  auto it = c.sizes.find(p);
  if (it == c.sizes.end()) { std::free(p); return; }
  c.free_blocks[it->second].push_back(p);
  c.cached_bytes += it->second;
}

struct CachingCPUAllocator final : public c10::Allocator {
  c10::DataPtr allocate(size_t n) override {
    const c10::Device dev(c10::DeviceType::CPU);
    if (n == 0) return {nullptr, nullptr, &cached_free, dev};
    const size_t r = round_size(n);
    Cache& c = cache();
    void* p = nullptr;
    {
      std::lock_guard<std::mutex> g(c.mu);
      auto it = c.free_blocks.find(r);
      if (it != c.free_blocks.end() && !it->second.empty()) {
        p = it->second.back();
        it->second.pop_back();
        c.cached_bytes -= r;
        c.reused++;
      }
    }
    if (p == nullptr) {
      p = std::aligned_alloc(64, r);
      TORCH_CHECK(p != nullptr, "harness caching CPU allocator: out of memory allocating ", r, " bytes");
      std::lock_guard<std::mutex> g(c.mu);
      c.sizes[p] = r;
      c.fresh++;
    }
    return {p, p, &cached_free, dev};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &cached_free; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
};

CachingCPUAllocator* g_alloc = new CachingCPUAllocator();
c10::Allocator* g_previous = nullptr;
}  // namespace

bool install() {
  if (g_previous != nullptr) return true;
  g_previous = c10::GetCPUAllocator();
  c10::SetCPUAllocator(g_alloc, /*priority=*/200);
  return c10::GetCPUAllocator() == g_alloc;
}

void uninstall() {
  if (g_previous == nullptr) return;
  c10::SetCPUAllocator(g_previous, /*priority=*/200);
  g_previous = nullptr;
}

int64_t poison(int64_t byte) {
  Cache& c = cache();
  std::lock_guard<std::mutex> g(c.mu);
  int64_t total = 0;
  for (auto& kv : c.free_blocks)
    for (void* p : kv.second) { std::memset(p, static_cast<int>(byte), kv.first); total += kv.first; }
  return total;
}

void trim() {
  Cache& c = cache();
  std::lock_guard<std::mutex> g(c.mu);
  for (auto& kv : c.free_blocks)
    for (void* p : kv.second) { c.sizes.erase(p); std::free(p); }
  c.free_blocks.clear();
  c.cached_bytes = 0;
}

std::vector<int64_t> stats() {
  Cache& c = cache();
  std::lock_guard<std::mutex> g(c.mu);
  return {static_cast<int64_t>(c.cached_bytes), static_cast<int64_t>(c.reused),
          static_cast<int64_t>(c.fresh), static_cast<int64_t>(c.sizes.size())};
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("install", &install);
  m.def("uninstall", &uninstall);
  m.def("poison", &poison);
  m.def("trim", &trim);
  m.def("stats", &stats);
}
"""


class Poisoner:
    """Fills the allocator's free memory with 0xFF before candidate calls."""

    def __init__(self, device: str, log: list[str]) -> None:
        self.device = device
        self.log = log
        self.cpu_ext = None
        self.mode = "none"
        self.last_bytes = 0

    def setup_cpu(self, build_dir: str) -> str:
        """Build and install the caching CPU allocator; returns a short status string."""
        if environ_get("VERIFIER_NO_CPU_CACHING_ALLOCATOR"):
            self.mode = "cpu-best-effort"
            return "caching CPU allocator disabled by VERIFIER_NO_CPU_CACHING_ALLOCATOR"
        from torch.utils.cpp_extension import load_inline

        digest = hashlib.sha256((CPU_ALLOC_SRC + torch.__version__).encode()).hexdigest()[:16]
        name = "kb_harness_cpualloc_" + digest
        bdir = os.path.join(build_dir, name)
        os.makedirs(bdir, exist_ok=True)
        try:
            with build.exclusive_build(bdir):
                ext = load_inline(name=name, cpp_sources=CPU_ALLOC_SRC, extra_cflags=["-O2"],
                                  build_directory=bdir, with_cuda=False, verbose=False)
            ok = ext.install()
        except Exception as exc:  # no compiler, old torch...: fall back, but say so
            self.mode = "cpu-best-effort"
            return "caching CPU allocator unavailable (%s); poisoning is best effort" % str(exc)[-300:]
        if not ok:
            self.mode = "cpu-best-effort"
            return "caching CPU allocator refused by c10::SetCPUAllocator; poisoning is best effort"
        self.cpu_ext = ext
        self.mode = "cpu-caching-allocator"
        return "caching CPU allocator installed (exact-size reuse, 512-byte classes)"

    def poison(self, size_hints: Iterable[int] = ()) -> int:
        """Poison free memory; size_hints are byte sizes of blocks the candidate may ask for."""
        if self.device == "cuda":
            self.last_bytes = _poison_cuda(size_hints)
            self.mode = "cuda-caching-allocator"
        elif self.cpu_ext is not None:
            # Blocks of the sizes the candidate will ask for enter the cache first (fresh
            # pages read as zeros, not poison), then every cached free block is filled.
            if self.cpu_ext.stats()[0] > (4 << 30):  # keep the emulated cache bounded
                self.cpu_ext.trim()
            held = [torch.empty(int(s), dtype=torch.uint8) for s in size_hints for _ in range(2) if s]
            del held
            self.last_bytes = int(self.cpu_ext.poison(POISON_BYTE))
        else:
            self.last_bytes = _poison_best_effort(size_hints)
        return self.last_bytes

    def release_cache(self) -> None:
        """Hand cached free blocks back, so the next free block of a size is the one freed next."""
        if self.device == "cuda":
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
        elif self.cpu_ext is not None:
            self.cpu_ext.trim()

    def stats(self) -> dict[str, Any]:
        if self.cpu_ext is not None:
            cached, reused, fresh, live = self.cpu_ext.stats()
            return {"mode": self.mode, "cached_bytes": cached, "reused_blocks": reused,
                    "fresh_blocks": fresh, "last_poisoned_bytes": self.last_bytes}
        return {"mode": self.mode, "last_poisoned_bytes": self.last_bytes}


def _poison_cuda(size_hints):
    sizes = []
    try:
        for seg in torch.cuda.memory_snapshot():
            for block in seg.get("blocks", []):
                if block.get("state") == "inactive":
                    sizes.append(int(block["size"]))
    except Exception:
        sizes = []
    # Blocks the candidate may request that are not cached yet: fresh cudaMalloc
    # memory can hold whatever a previous owner left there, so poison it too.
    sizes.extend(int(s) for s in size_hints if s)
    held, total = [], 0
    for size in sorted(sizes, reverse=True):
        try:
            t = torch.empty(size, dtype=torch.uint8, device="cuda")
        except RuntimeError:
            break
        t.fill_(POISON_BYTE)
        held.append(t)
        total += size
    torch.cuda.synchronize()
    del held
    return total


def _poison_best_effort(size_hints):
    held, total = [], 0
    for size in size_hints:
        if size:
            t = torch.empty(int(size), dtype=torch.uint8)
            t.fill_(POISON_BYTE)
            held.append(t)
            total += int(size)
    del held
    return total


def is_poison(t: torch.Tensor) -> torch.Tensor:
    """Boolean mask of elements that carry the poison pattern (NaN for floats, -1 for ints)."""
    if t.is_floating_point() or t.is_complex():
        return torch.isnan(t)
    if t.dtype == torch.bool:
        return torch.zeros_like(t, dtype=torch.bool)
    return t == -1
