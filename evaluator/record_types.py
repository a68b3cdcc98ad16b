"""Typed checks of the result document inside a signed record (no Django): every field the site
reads from it is checked for its type before anything reads it, so a mistyped field refuses the
record naming that field (a 400 on upload) instead of failing deep inside the import (a 500:
issue #37). The rest of the document is stored as JSON and shown escaped.

Numbers the harness measured may be NaN or infinite, which records carry as text ("nan",
"inf"), so measured figures are "a number, null or text".
"""
from .verification_records import RecordProblem

_TEXT = (str, type(None))


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _figure(value) -> bool:
    """A measured figure: a number, null, or text for NaN and infinities."""
    return value is None or _is_number(value) or isinstance(value, str)


def _scalar(value) -> bool:
    return value is None or isinstance(value, (str, bool, int, float))


def check_result_types(result: dict, where: str) -> None:
    """Raise RecordProblem naming the first field of `result` whose type is wrong."""
    def fail(field: str, expected: str):
        raise RecordProblem(where, f"result.{field} must be {expected}")

    for name in ("device", "kind", "log", "note", "error", "reason", "build_dir"):
        if name in result and not isinstance(result[name], _TEXT):
            fail(name, "text or null")
    if "result_version" in result and not (result["result_version"] is None
                                           or (isinstance(result["result_version"], int)
                                               and not isinstance(result["result_version"], bool))):
        fail("result_version", "a whole number")
    versions = result.get("versions", {})
    if not isinstance(versions, dict):
        fail("versions", "an object")
    for key, value in versions.items():
        if not _scalar(value):
            fail(f"versions.{key}", "text, a number, true/false or null")
    for name in ("flags", "task_flags"):
        flags = result.get(name, [])
        if not isinstance(flags, list):
            fail(name, "a list of {name, blocking, evidence}")
        for index, flag in enumerate(flags):
            if not isinstance(flag, dict) or not isinstance(flag.get("name"), str):
                fail(f"{name}[{index}]", "an object with a text name")
            if "blocking" in flag and not isinstance(flag["blocking"], bool):
                fail(f"{name}[{index}].blocking", "true or false")
    _check_trials(result, fail)
    for name in ("tolerance", "checks", "sandbox", "summary"):
        if name in result and not isinstance(result[name], (dict, type(None))):
            fail(name, "an object")
    _check_timings(result, fail)
    speedup = result.get("speedup", {})
    if not isinstance(speedup, (dict, type(None))):
        fail("speedup", "an object")
    for key, value in (speedup or {}).items():
        if not (_figure(value) or isinstance(value, dict)):
            fail(f"speedup.{key}", "a number, null, text or an object")


def _check_trials(result: dict, fail) -> None:
    seeds = result.get("seeds", [])
    if not isinstance(seeds, (list, type(None))) or any(
            not isinstance(seed, int) or isinstance(seed, bool) for seed in seeds or []):
        fail("seeds", "a list of whole numbers")
    trials = result.get("trials", [])
    if not isinstance(trials, (list, type(None))):
        fail("trials", "a list of objects")
    for index, trial in enumerate(trials or []):
        if not isinstance(trial, dict):
            fail(f"trials[{index}]", "an object")
        if "seed" in trial and not (trial["seed"] is None or (isinstance(trial["seed"], int)
                                                              and not isinstance(trial["seed"], bool))):
            fail(f"trials[{index}].seed", "a whole number or null")
        for key in ("max_abs_err", "rel_norm_err"):
            if key in trial and not _figure(trial[key]):
                fail(f"trials[{index}].{key}", "a number, null or text")


def _check_timings(result: dict, fail) -> None:
    timings = result.get("timings", {})
    if not isinstance(timings, (dict, type(None))):
        fail("timings", "an object")
    for name, entry in (timings or {}).items():
        if isinstance(entry, dict):
            for key in ("median_ms", "iqr_ms", "mean_ms", "min_ms", "max_ms"):
                if key in entry and not _figure(entry[key]):
                    fail(f"timings.{name}.{key}", "a number, null or text")
            for key in ("clock", "method"):
                if key in entry and not isinstance(entry[key], _TEXT):
                    fail(f"timings.{name}.{key}", "text or null")
            if "end_to_end" in entry and not isinstance(entry["end_to_end"], (dict, type(None))):
                fail(f"timings.{name}.end_to_end", "an object or null")
            if isinstance(entry.get("end_to_end"), dict) and not _figure(entry["end_to_end"].get("median_ms")):
                fail(f"timings.{name}.end_to_end.median_ms", "a number, null or text")
        elif not _figure(entry):
            fail(f"timings.{name}", "an object, a number, null or text")
