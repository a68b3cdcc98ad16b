"""Map one verification result document onto Verification fields (no I/O, no ORM). The
document's keys belong to verifier/core/result.py; this reads them only through it."""
import json

from verifier.core import result as result_doc

STATUS_BY_VERDICT = {"passed": "passed", "failed": "failed", "error": "error"}
MAX_LOG_CHARS = 100_000


def fields_from_result(result: dict) -> dict:
    versions = result.get("versions") or {}
    trials = result.get("trials") or []
    return {
        "status": STATUS_BY_VERDICT.get(result.get("verdict"), "error"),
        "gpu_name": str(versions.get("gpu") or "")[:128],
        "versions": versions,
        "harness_version": str(versions.get("harness") or "")[:32],
        "device": str(result.get("device") or "")[:8],
        "seeds": [trial.get("seed") for trial in trials if isinstance(trial, dict) and "seed" in trial],
        "trials": trials,
        "tolerance": result.get("tolerance") or {},
        "max_abs_error": result_doc.max_over_trials(result, "max_abs_err"),
        "max_rel_error": result_doc.max_over_trials(result, "rel_norm_err"),
        "timings": result.get("timings") or {},
        "runtime_ms": result_doc.median_ms(result, "candidate"),
        "eager_runtime_ms": result_doc.median_ms(result, "eager"),
        "compile_runtime_ms": result_doc.median_ms(result, "compile"),
        "speedup_eager": result_doc.speedup(result, "vs_eager"),
        "speedup_compile": result_doc.speedup(result, "vs_compile"),
        "flags": result_doc.all_flags(result),
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
