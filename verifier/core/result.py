"""The verification result document: its keys, its version, how a failure document is made,
and how it is read back. Every producer (judge, sandbox, bundle script) and every reader
(worker, site, exports) goes through this module, so the keys cannot drift apart.

A document is plain JSON:

- ``result_version``: RESULT_VERSION; ``verdict``: passed, failed, error (or built, from a
  build-only run); ``error``: why no verdict was reached, else null;
- ``flags``: ``[{name, blocking, evidence, source?, occurrences?}]``: findings about the
  candidate. ``source`` is ``judge`` for what the judge established itself and ``runner``
  for evidence reported by the process that ran the candidate (which can only fail a kernel,
  never pass it); ``task_flags``: findings about the reference (weak checks);
- ``trials``: per seed ``{seed, passed, max_abs_err, rel_norm_err, reason, runs}``;
- ``tolerance``, ``timings`` (``candidate``/``eager``/``compile``: ``median_ms``, ``iqr_ms``,
  ``n``, ... on the ranking clock, named by ``clock`` and ``method``, with the same figures on
  the end-to-end clock under ``end_to_end``; or ``skipped``/``error``), ``speedup``
  (``vs_eager``, ``vs_compile`` on the ranking clock, ``clock``, and ``end_to_end``:
  ``{vs_eager, vs_compile}``). Since version 3 the ranking clock on a GPU is ``gpu_time``
  (the call's launch queued behind a spin: device time without the host's launch gaps); since
  harness 2.3.0 it is ``kernel_time`` (the device's busy time from the profiler, with
  ``event_median_ms`` and ``fallback`` saying why) when a call waits for the device inside
  itself; since harness 2.4.0 ``gpu_time`` is the queued call's device busy time from the
  profiler, bounded below by its events (``checks.timing.gpu_time_busy`` says whether it was
  used; ``event_median_ms`` and ``event_bounded_calls`` beside the figure); on the CPU it is ``host`` and ``timings.<name>.gpu_time`` says why there is no GPU time.
  Version 2 documents have one clock (CUDA events after a 50 us spin), read as end to end;
- ``versions`` (harness version and sha256, python, torch, CUDA, driver, GPU, CPU),
  ``device``, ``kind``, ``seeds``, ``log``, ``checks`` (raw evidence), ``sandbox`` (when run
  through verifier/core/sandbox.py).
"""
from __future__ import annotations

import json
import math
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

RESULT_VERSION = 3
HARNESS_VERSION = "2.9.1"
VERDICTS = ("passed", "failed", "error")
BUILD_VERDICT = "built"
MAX_LOG_CHARS = 30000


def flag(name: str, blocking: bool, evidence: str, **extra: Any) -> dict[str, Any]:
    """A finding: ``{name, blocking, evidence}`` plus ``extra`` keys (``source``, ``step``, ...)."""
    entry = {"name": name, "blocking": bool(blocking), "evidence": evidence}
    entry.update(extra)
    return entry


def new_document(*, kind: str | None = None, device: str | None = None) -> dict[str, Any]:
    return {"result_version": RESULT_VERSION, "verdict": None, "error": None, "flags": [], "task_flags": [],
            "trials": [], "tolerance": {}, "timings": {}, "speedup": {}, "versions": {}, "device": device,
            "kind": kind, "seeds": [], "log": "", "checks": {}}


def failure_document(verdict: str, reason: str, flag_name: str | None = None, *, blocking: bool = True,
                     log: str | None = "", sandbox: dict[str, Any] | None = None, device: str | None = None,
                     kind: str | None = None) -> dict[str, Any]:
    """A document for a run that produced none of its own (crash, timeout, unreadable output)."""
    doc = new_document(kind=kind, device=device)
    if flag_name:
        doc["flags"].append(flag(flag_name, blocking, reason, source="judge"))
    doc.update(verdict=verdict, error=None if verdict == "failed" else reason, reason=reason,
               log=(log or "")[-MAX_LOG_CHARS:], versions={"python": sys.version.split()[0]})
    if sandbox is not None:
        doc["sandbox"] = sandbox
    return doc


def add_flag(flags: list[dict[str, Any]], entry: dict[str, Any]) -> None:
    """One entry per flag name: the first evidence is kept, repeats are counted, and a
    repeat that blocks makes the flag blocking."""
    for existing in flags:
        if existing["name"] == entry["name"]:
            existing["occurrences"] = existing.get("occurrences", 1) + 1
            existing["blocking"] = existing["blocking"] or entry["blocking"]
            return
    flags.append(entry)


def decide(doc: dict[str, Any]) -> str:
    """passed only when every trial passed and no blocking flag was raised."""
    if doc.get("verdict") is not None:
        return doc["verdict"]
    blocking = [f for f in doc["flags"] if f["blocking"]]
    trials = doc["trials"]
    return "passed" if trials and all(t["passed"] for t in trials) and not blocking else "failed"


def finite(obj: Any) -> Any:
    """Strict JSON: non-finite floats become null (the accompanying text says why)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    return obj


def dumps(doc: dict[str, Any], indent: int | None = 1) -> str:
    return json.dumps(finite(doc), indent=indent, default=str, allow_nan=False)


def loads(text: str | bytes) -> dict[str, Any]:
    """Parse a document from untrusted text; raises ValueError when it is not one."""
    doc = json.loads(text)
    if not isinstance(doc, dict) or doc.get("verdict") not in VERDICTS + (BUILD_VERDICT,):
        raise ValueError("not a verification result document (no verdict)")
    for key in ("flags", "task_flags", "trials"):
        if not isinstance(doc.get(key, []), list):
            raise ValueError("%s is not a list" % key)
    return doc


# Readers: the numbers a page, the worker or an export takes from a document.

def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def median_ms(doc: dict[str, Any], name: str) -> float | None:
    entry = (doc.get("timings") or {}).get(name)
    return _number(entry.get("median_ms")) if isinstance(entry, dict) else None


def speedup(doc: dict[str, Any], name: str) -> float | None:
    return _number((doc.get("speedup") or {}).get(name))


def end_to_end_ms(doc: dict[str, Any], name: str) -> float | None:
    """The end-to-end median: its own entry since version 3; a version-2 document's only figure."""
    entry = (doc.get("timings") or {}).get(name)
    if not isinstance(entry, dict):
        return None
    if "clock" not in entry:
        return _number(entry.get("median_ms"))
    e2e = entry.get("end_to_end")
    return _number(e2e.get("median_ms")) if isinstance(e2e, dict) else None


def end_to_end_speedup(doc: dict[str, Any], name: str) -> float | None:
    found = doc.get("speedup") or {}
    if "clock" not in found:
        return _number(found.get(name))
    e2e = found.get("end_to_end")
    return _number(e2e.get(name)) if isinstance(e2e, dict) else None


def timing_clock(doc: dict[str, Any], name: str = "candidate") -> tuple[str | None, str | None]:
    """(clock, method) of the ranking figure: ``gpu_time``, ``host``, or for a version-2
    document ``end_to_end`` (CUDA events after a 50 us spin, the host's later launches in it)."""
    entry = (doc.get("timings") or {}).get(name)
    if not isinstance(entry, dict) or _number(entry.get("median_ms")) is None:
        return None, None
    if "clock" not in entry:
        if doc.get("device") == "cpu":
            return "host", "host clock around the call (harness before 2.1.0)"
        return "end_to_end", "CUDA events around the call after a 50 us spin (harness before 2.1.0)"
    return str(entry.get("clock")), str(entry.get("method") or "")


def max_over_trials(doc: dict[str, Any], key: str) -> float | None:
    values = [_number(t.get(key)) for t in doc.get("trials") or [] if isinstance(t, dict)]
    values = [v for v in values if v is not None]
    return max(values) if values else None


def all_flags(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Candidate flags, then task flags marked as such."""
    return list(doc.get("flags") or []) + [dict(f, task_flag=True) for f in doc.get("task_flags") or []]
