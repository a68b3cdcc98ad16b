"""A task's torch.compile baseline, timed once on a host and reused by its later verifications.

The compiled reference of one task version is the same program for every kernel of that task on
one GPU model, driver, torch and verifier, so compiling and timing it again for each kernel only
costs the worker (its compile ~15 s of a judge's CPU, a third of every timed round on the GPU).
A judge given ``--shared-baseline-dir`` reads the entry for its key there; when there is one it
does not compile, and the eager reference is still timed interleaved with the candidate, in the
same minutes. The shared figure is used only while that eager median, on the same clock, stays
within ``MAX_EAGER_DRIFT`` (by device) of the eager median timed beside the compile baseline: a host that got
slower or faster (or a baseline timed beside a kernel that loaded the GPU) shows as drift, and the
entry is dropped so the next verification times compile again and replaces it. Entries older than
``MAX_AGE_S`` are re-timed too. The runner never gets this folder (it is not among the folders it
may write: docs/harness.md, "Shared compile baseline"). No Django imports: shipped in the bundle.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

# |eager now / eager beside the shared figure - 1| allowed: about a loaded H200's spread of GPU-time
# medians across processes; the host clock of a CPU run (CI) moves far more.
MAX_EAGER_DRIFT = {"cuda": 0.10, "cpu": 0.5}
MAX_AGE_S = 24 * 3600.0
# One verification at a time times a task's baseline; the others of its wave skip compiling and
# read its entry after their own timing. A claim older than this was left by a judge that died.
CLAIM_STALE_S = 600.0
ENTRY_VERSION = 1


def key_of(*, reference_src: str, versions: dict[str, Any],
           timing_settings: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The entry's key: what makes two compile baselines the same measurement."""
    parts = {"reference_sha256": hashlib.sha256(reference_src.encode()).hexdigest(),
             "timing": timing_settings, "entry_version": ENTRY_VERSION,
             **{k: versions.get(k) for k in ("harness_sha256", "torch", "cuda", "driver", "gpu", "gpu_capability")}}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:32], parts


class SharedBaseline:
    """One task's entry in a host's shared-baseline folder."""

    def __init__(self, directory: str | os.PathLike[str], *, reference_src: str, versions: dict[str, Any],
                 timing_settings: dict[str, Any], now: Callable[[], float] = time.time) -> None:
        self.directory = directory
        self.key, self.parts = key_of(reference_src=reference_src, versions=versions, timing_settings=timing_settings)
        self.path = os.path.join(directory, self.key + ".json")
        self.now = now
        self.note = None  # why the shared figure was not used, for the document
        self.max_drift = MAX_EAGER_DRIFT.get(timing_settings.get("device"), MAX_EAGER_DRIFT["cpu"])

    def lookup(self) -> dict[str, Any] | None:
        """The entry, or None (none yet, unreadable, or too old: then this verification re-times it)."""
        try:
            with open(self.path) as fh:
                entry = json.load(fh)
        except FileNotFoundError:
            self.note = "no shared compile baseline for this task on this host yet: timed here and stored"
            return None
        except (OSError, ValueError) as exc:
            self.note = "the shared compile baseline could not be read (%s): timed here" % type(exc).__name__
            return None
        age = self.now() - float(entry.get("timed_at") or 0)
        if entry.get("key") != self.key or not isinstance(entry.get("compile"), dict) or age > MAX_AGE_S:
            self.note = "the shared compile baseline was %.0f h old (re-timed after %.0f h): timed here" % (
                age / 3600, MAX_AGE_S / 3600)
            return None
        return entry

    def claim(self) -> bool:
        """True if this verification is to time the baseline: no other one on this host is timing
        it now (a claim file, made atomically, or a stale one taken over)."""
        os.makedirs(self.directory, exist_ok=True)
        claim = self.path + ".timing"
        try:
            os.close(os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
        except FileExistsError:
            try:
                if self.now() - os.stat(claim).st_mtime < CLAIM_STALE_S:
                    return False
            except FileNotFoundError:
                pass
            with open(claim, "w"):
                pass
        self.claimed = True
        return True

    def release(self) -> None:
        if getattr(self, "claimed", False):
            self.claimed = False
            try:
                os.unlink(self.path + ".timing")
            except FileNotFoundError:
                pass

    def apply(self, entry: dict[str, Any], timings: dict[str, Any]) -> bool:
        """Put the entry's compile figures in ``timings`` if the eager reference timed now agrees
        with the one timed beside it; otherwise drop the entry and say why. Returns whether used."""
        eager, then = timings.get("eager") or {}, entry.get("eager") or {}
        if eager.get("clock") != then.get("clock"):
            return self._unused(timings, "the shared compile baseline was timed on the %s clock, this kernel ranks "
                                         "on the %s clock" % (then.get("clock"), eager.get("clock")), drop=False)
        drift = _drift(eager.get("median_ms"), then.get("median_ms"))
        if drift is None or abs(drift) > self.max_drift:
            return self._unused(timings, "the eager reference now takes %s ms against %s ms beside the shared compile "
                                         "baseline (more than %.0f %% apart): the baseline is stale and is timed "
                                         "again by the next verification" % (
                                             _ms(eager.get("median_ms")), _ms(then.get("median_ms")),
                                             100 * self.max_drift), drop=True)
        compiled = dict(entry["compile"])
        e2e_drift = _drift((eager.get("end_to_end") or {}).get("median_ms"), (then.get("end_to_end") or {}).get("median_ms"))
        shared = {"timed_at": entry["timed_at"], "age_s": round(self.now() - entry["timed_at"], 1), "key": self.key,
                  "eager_median_ms_then": then.get("median_ms"), "eager_median_ms_now": eager.get("median_ms"),
                  "eager_drift": round(drift, 4), "max_eager_drift": self.max_drift,
                  "from": "timed in an earlier verification of this task on this host (same GPU, driver, torch and "
                          "verifier; its timing raised no flag); the eager reference was timed beside this kernel"}
        if e2e_drift is None or abs(e2e_drift) > self.max_drift:  # the end-to-end figure moved: not comparable
            compiled.pop("end_to_end", None)
            shared["end_to_end"] = "left out: the eager reference's end-to-end time moved by %s since" % (
                "an unknown amount" if e2e_drift is None else "%.0f %%" % (100 * e2e_drift))
        else:
            shared["eager_end_to_end_drift"] = round(e2e_drift, 4)
        compiled["shared"] = shared
        timings["compile"] = compiled
        self.note = None
        return True

    def store(self, timings: dict[str, Any]) -> bool:
        """Keep this verification's compile and eager figures for the task's later verifications."""
        compiled, eager = timings.get("compile") or {}, timings.get("eager") or {}
        if not compiled.get("median_ms") or not eager.get("median_ms"):
            return False
        entry = {"key": self.key, "parts": self.parts, "timed_at": self.now(),
                 "compile": {k: v for k, v in compiled.items() if k != "shared"},
                 "eager": {"clock": eager.get("clock"), "median_ms": eager.get("median_ms"),
                           "iqr_ms": eager.get("iqr_ms"), "n": eager.get("n"),
                           "end_to_end": {"median_ms": (eager.get("end_to_end") or {}).get("median_ms")}}}
        os.makedirs(self.directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".entry_")
        with os.fdopen(fd, "w") as fh:
            json.dump(entry, fh)
        os.replace(tmp, self.path)  # whole entries only: lanes of one host share the folder
        return True

    def _unused(self, timings, why, drop):
        if drop:
            try:
                os.unlink(self.path)
            except OSError:
                pass
        timings["compile"] = {"skipped": why}
        self.note = why
        return False


def _drift(now_ms, then_ms):
    if not (isinstance(now_ms, (int, float)) and isinstance(then_ms, (int, float)) and then_ms > 0):
        return None
    return now_ms / then_ms - 1.0


def _ms(value):
    return "%.4g" % value if isinstance(value, (int, float)) else "?"
