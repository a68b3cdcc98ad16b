"""Map one harness JSON document onto Verification fields (no I/O, no ORM)."""
import json

STATUS_BY_VERDICT = {"passed": "passed", "failed": "failed", "error": "error"}
MAX_LOG_CHARS = 100_000


def fields_from_result(result: dict) -> dict:
    versions = result.get("versions") or {}
    timings = result.get("timings") or {}
    speedup = result.get("speedup") or {}
    trials = result.get("trials") or []
    flags = (result.get("flags") or []) + [dict(flag, task_flag=True) for flag in result.get("task_flags") or []]
    return {
        "status": STATUS_BY_VERDICT.get(result.get("verdict"), "error"),
        "gpu_name": str(versions.get("gpu") or "")[:128],
        "versions": versions,
        "harness_version": str(versions.get("harness") or "")[:32],
        "device": str(result.get("device") or "")[:8],
        "seeds": [trial.get("seed") for trial in trials if isinstance(trial, dict) and "seed" in trial],
        "trials": trials,
        "tolerance": result.get("tolerance") or {},
        "max_abs_error": _max(trials, "max_abs_err"),
        "max_rel_error": _max(trials, "rel_norm_err"),
        "timings": timings,
        "runtime_ms": _median(timings, "candidate"),
        "eager_runtime_ms": _median(timings, "eager"),
        "compile_runtime_ms": _median(timings, "compile"),
        "speedup_eager": _float(speedup.get("vs_eager")),
        "speedup_compile": _float(speedup.get("vs_compile")),
        "flags": flags,
        "log": _log(result),
    }


def _log(result: dict) -> str:
    parts = []
    if result.get("error"):
        parts.append(f"error: {result['error']}")
    for key in ("reason", "log"):
        value = result.get(key)
        if value:
            parts.append(value if isinstance(value, str) else json.dumps(value, default=str))
    return "\n".join(parts)[-MAX_LOG_CHARS:]


def _float(value):
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _median(timings: dict, name: str):
    entry = timings.get(name)
    return _float(entry.get("median_ms")) if isinstance(entry, dict) else None


def _max(trials: list, key: str):
    values = [_float(t.get(key)) for t in trials if isinstance(t, dict)]
    values = [v for v in values if v is not None]
    return max(values) if values else None
