"""One demo-archive row (the AI CUDA Engineer Archive's columns) and its results entry, from
the saved results of an entry's build steps (evaluator/demo_archive/build.py). No I/O here.

The row's numbers are the naive evaluator's claims; the results entry sets them beside what
the harness re-measured (docs/demo_archive.md).
"""
STEPS = ("check", "naive", "timed", "ncu", "torch_profile", "clang_tidy")


def archive_row(manifest, entry, index, steps, *, sources):
    """(row or None when the naive evaluator has not run, results entry). steps: step -> saved
    document or None; sources: (reference, candidate, functional form or None) texts."""
    name = entry["name"]
    task = manifest["tasks"][entry["task"]]
    reference_src, candidate_src, functional_src = sources
    naive, check, timed = steps["naive"], steps["check"], steps["timed"]
    result = {"task": entry["task"], "role": entry.get("role"), "cheat": entry.get("cheat"),
              "note": entry.get("note"), "file": entry["file"], "level": task["level"],
              "task_id": task["task_id"], "kernel_name": name, "naive": naive, "harness": check,
              "harness_timed": timed, "profiles": {}}
    for step in ("ncu", "torch_profile", "clang_tidy"):
        saved = steps[step]
        if saved is not None:
            res = saved.get("result")
            result["profiles"][step] = {"wall_s": saved.get("wall_s"),
                                        "error": res.get("error") if isinstance(res, dict) else None,
                                        "present": bool(isinstance(res, dict) and (res.get("parsed") or
                                                                                   "stdout" in res))}
    doc = timed or check or {}
    t = doc.get("timings") or {}
    result["remeasured"] = {
        "verdict": doc.get("verdict"), "blocking_flags": blocking_flags(doc), "phase": "timed" if timed else "check",
        "advisory_flags": sorted({f["name"] for f in doc.get("flags", []) if not f.get("blocking")}),
        "candidate_median_ms": (t.get("candidate") or {}).get("median_ms"),
        "eager_median_ms": (t.get("eager") or {}).get("median_ms"),
        "compile_median_ms": (t.get("compile") or {}).get("median_ms"), "speedup": doc.get("speedup") or {}}
    if naive is None:
        result["claimed"] = None
        return None, result
    correct = naive.get("verdict") == "correct"
    error = naive.get("error") or (None if naive.get("verdict") in ("correct", "incorrect")
                                   else naive.get("reason") or "the naive evaluator did not finish")
    row = {
        "Op_Name": task["op_name"], "Level_ID": task["level"], "Task_ID": task["task_id"], "Kernel_Name": name,
        "CUDA_Runtime": naive.get("runtime_ms") if correct else None,
        "PyTorch_Native_Runtime": naive.get("native_runtime_ms"),
        "PyTorch_Compile_Runtime": naive.get("compile_runtime_ms"),
        "CUDA_Speedup_Native": naive.get("speedup_native") if correct else 0.0,
        "CUDA_Speedup_Compile": naive.get("speedup_compile") if correct else 0.0,
        "CUDA_Code": candidate_src, "PyTorch_Code_Module": reference_src, "PyTorch_Code_Functional": functional_src,
        "Correct": correct, "Max_Diff": _finite(naive.get("max_diff")), "Error": error,
        "NCU_Profile": _parsed_profile(steps["ncu"]) if correct else None,
        "Torch_Profile": _parsed_profile(steps["torch_profile"]) if correct else None,
        "Clang_Tidy": _lint(steps["clang_tidy"]) if correct else None,
        "__index_level_0__": index,
        "Hardware": naive.get("hardware") or (doc.get("versions") or {}).get("gpu"),
        "Experiment": manifest.get("experiment", "kernel-archive-demo"),
    }
    result["claimed"] = {k: row[k] for k in ("CUDA_Runtime", "PyTorch_Native_Runtime", "PyTorch_Compile_Runtime",
                                             "CUDA_Speedup_Native", "CUDA_Speedup_Compile", "Correct",
                                             "Max_Diff", "Error", "Hardware")}
    return row, result


def blocking_flags(doc):
    return sorted({f["name"] for f in (doc or {}).get("flags", []) if f.get("blocking")})


def _parsed_profile(saved):
    """The archive's Python-repr string of a profiler's parsed result, or None."""
    res = (saved or {}).get("result")
    if isinstance(res, dict) and isinstance(res.get("parsed"), dict) and res["parsed"]:
        return repr(res["parsed"])
    return None


def _lint(saved):
    res = (saved or {}).get("result")
    return repr(res) if isinstance(res, dict) else None


def _finite(v):
    """Strict JSON for the row: a NaN/inf max diff (a cheat's garbage output) is null."""
    return v if isinstance(v, (int, float)) and v == v and v not in (float("inf"), float("-inf")) else None
