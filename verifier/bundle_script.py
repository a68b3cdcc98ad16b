#!/usr/bin/env python3
"""Re-verify the kernel in this bundle and compare the result with the archive's claims.

    python verify.py [--device cuda|cpu] [--json result.json] [--seeds 1,2,3] [-- HARNESS OPTIONS]

Runs the verifier shipped beside this file (``python -m verifier.core.judge``, the same command
the site's workers run) in a subprocess on reference.py, the kernel source and functional.py
when present, prints the verdict, every flag with its evidence and a claimed-vs-re-measured
table, and writes the full result document (plus the claims and a check of SHA256SUMS) to
--json. Anything after ``--`` goes to the judge as is (e.g. ``-- --build-dir DIR
--time-budget 20``). Needs only the standard library and torch.

Exit status: 0 when the harness decided (verdict passed or failed, as the harness itself
does), 2 when it could not (verdict error: build failure, crash, timeout, bad output).

This file is shipped as verify.py inside every verification bundle (verifier/bundle.py).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from verifier.core import result as result_doc

HERE = Path(__file__).resolve().parent
CANDIDATE_FILE_BY_KIND = {"cuda_forward": "kernel.cu", "model_new": "model_new.py"}
NO_VERDICT_EXIT_STATUS = 2


def pick_device(requested: str | None) -> str:
    if requested:
        return requested
    try:
        import torch
    except ImportError:
        sys.exit("verify.py needs PyTorch: pip install torch")
    return "cuda" if torch.cuda.is_available() else "cpu"


def cuda_device_found() -> str:
    """What this machine offers a CUDA kernel, in words, for the message that it needs a GPU."""
    try:
        import torch
    except ImportError:
        return "PyTorch is not installed here"
    if torch.cuda.is_available():
        return (f"--device cpu was given although torch sees {torch.cuda.get_device_name()}: "
                "leave --device out (or pass --device cuda)")
    if torch.version.cuda is None:
        return f"torch {torch.__version__} here is a CPU-only build (torch.version.cuda is None)"
    return f"torch {torch.__version__} (built for CUDA {torch.version.cuda}) sees no CUDA device here"


def cpu_run_refused(bundle_dir: Path, claims: dict, device: str) -> dict | None:
    """An error document when a CPU run is asked of CUDA code, else None. The rule is the judge's
    own (static_scan.needs_cuda; judge.py refuses the same kernels on the CPU), applied here first
    so the user reads one message saying what is needed and what was found, not a run's report."""
    kind = claims["kernel"]["kind"]
    if device != "cpu" or kind not in CANDIDATE_FILE_BY_KIND:
        return None
    from verifier.core import static_scan  # imports torch: only once a CPU run is asked for

    source_file = CANDIDATE_FILE_BY_KIND[kind]
    source = (bundle_dir / source_file).read_text(encoding="utf-8", errors="replace")
    if not static_scan.needs_cuda(source, kind):
        return None
    found = cuda_device_found()
    reason = (f"this kernel needs a CUDA device: {source_file} contains CUDA device code, which only a GPU can run, "
              f"and {found}. No verdict on its correctness or speed was reached; run it where torch sees an "
              "NVIDIA GPU (python verify.py, or --device cuda)")
    doc = result_doc.failure_document("error", reason, device=device, kind=kind)
    doc["checks"]["device"] = {"needs_cuda": True, "requested": device, "found": found}
    return doc


def check_files(bundle_dir: Path) -> dict:
    """Compare the bundle's files with SHA256SUMS, so a locally edited kernel is noticed."""
    sums_file = bundle_dir / "SHA256SUMS"
    if not sums_file.exists():
        return {"files_intact": None, "modified": [], "note": "SHA256SUMS missing"}
    modified = []
    for line in sums_file.read_text(encoding="utf-8").splitlines():
        expected, _, name = line.partition("  ")
        path = bundle_dir / name
        if not path.is_file() or hashlib.sha256(path.read_bytes()).hexdigest() != expected:
            modified.append(name)
    return {"files_intact": not modified, "modified": modified}


def harness_command(
    bundle_dir: Path, claims: dict, device: str, seeds: str | None, json_path: Path, extra: list[str]
) -> list[str]:
    """The judge's command line; run it with the bundle folder as the working directory, so
    ``-m verifier.core.judge`` finds the bundle's own verifier. ``seeds`` None: the judge draws them
    after the kernel has loaded (pin them only to reproduce a run)."""
    kind = claims["kernel"]["kind"]
    command = [
        sys.executable, "-m", "verifier.core.judge",
        "--reference", str(bundle_dir / "reference.py"),
        "--candidate", str(bundle_dir / CANDIDATE_FILE_BY_KIND[kind]),
        "--kind", kind,
        "--device", device,
        "--json", str(json_path),
    ]
    if seeds:
        command += ["--seeds", seeds]
    if (bundle_dir / "functional.py").exists():
        command += ["--functional", str(bundle_dir / "functional.py")]
    return command + extra


def run_harness(command: list[str], bundle_dir: Path, json_path: Path, timeout_s: float, verbose: bool) -> dict:
    """The judge's result document, or an 'error' document carrying the reason and log tail."""
    # Keep the bundle directory identical to the zip: no __pycache__ next to its files.
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    output = None if verbose else subprocess.PIPE
    try:
        completed = subprocess.run(
            command, cwd=bundle_dir, env=env, stdout=output, stderr=output, text=True, timeout=timeout_s
        )
    except subprocess.TimeoutExpired:
        return result_doc.failure_document("error", f"the verifier did not finish within {timeout_s:.0f} s")
    log = ((completed.stdout or "") + (completed.stderr or ""))[-20000:]
    try:
        return result_doc.loads(json_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return result_doc.failure_document(
            "error", f"the verifier exited with status {completed.returncode} without a readable result ({exc})",
            log=log)


def _number(value) -> str:
    if isinstance(value, bool) or value is None:
        return "-" if value is None else str(value)
    if isinstance(value, (int, float)):
        return f"{value:.4g}"
    return str(value)


def comparison_rows(claimed: dict, result: dict) -> list[tuple[str, str, str]]:
    speedup = result.get("speedup") or {}
    return [
        ("runtime (ms)", _number(claimed.get("runtime_ms")), _number(result_doc.median_ms(result, "candidate"))),
        ("eager baseline (ms)", _number(claimed.get("native_runtime_ms")), _number(result_doc.median_ms(result, "eager"))),
        ("compile baseline (ms)", _number(claimed.get("compile_runtime_ms")), _number(result_doc.median_ms(result, "compile"))),
        ("speedup vs eager", _number(claimed.get("speedup_native")), _number(speedup.get("vs_eager"))),
        ("speedup vs compile", _number(claimed.get("speedup_compile")), _number(speedup.get("vs_compile"))),
        ("clock of the figures above", "-", str(result_doc.timing_clock(result)[0] or "-")),
        ("end-to-end runtime (ms)", "-", _number(result_doc.end_to_end_ms(result, "candidate"))),
        ("end-to-end eager (ms)", "-", _number(result_doc.end_to_end_ms(result, "eager"))),
        ("end-to-end speedup vs eager", "-", _number(result_doc.end_to_end_speedup(result, "vs_eager"))),
        # Only a verdict says correct or not: an error reached none, and "False" would say it failed.
        ("correct", _number(claimed.get("correct")),
         {"passed": "True", "failed": "False"}.get(result.get("verdict"), "- (no verdict)")),
        ("max abs diff", _number(claimed.get("max_diff")),
         _number(result_doc.max_over_trials(result, "max_abs_err"))),
    ]


def _flag_line(flag) -> str:
    if not isinstance(flag, dict):
        return str(flag)[:500]
    kind = "blocking" if flag.get("blocking") else "advisory"
    evidence = flag.get("evidence")
    evidence_text = evidence if isinstance(evidence, str) else json.dumps(evidence, sort_keys=True, default=str)
    return f"[{kind}] {flag.get('name')}: {evidence_text[:500]}"


def print_report(claims: dict, result: dict, device: str, json_path: Path, files: dict) -> None:
    claimed = claims.get("claimed") or {}
    versions = result.get("versions") or {}
    device_check = (result.get("checks") or {}).get("device")
    if isinstance(device_check, dict) and device_check.get("needs_cuda"):
        # Nothing ran: one message, no table of dashes nor a "correct" line to contradict it.
        print(f"Verdict: ERROR  (device: {device}): {result.get('error')}")
        print(f"\nFull result: {json_path}")
        return
    print(f"Verdict: {str(result.get('verdict')).upper()}  (device: {device})")
    if result.get("error"):
        print(f"Error: {result['error']}")
        if result.get("log"):
            print("Last lines of the harness log:\n" + "\n".join(str(result["log"]).splitlines()[-30:]))
    if files.get("files_intact") is False:
        print(f"Warning: files differ from SHA256SUMS: {', '.join(files['modified'])}")
    trials = [trial for trial in result.get("trials") or [] if isinstance(trial, dict)]
    failed_trials = [trial for trial in trials if trial.get("passed") is False]
    print(f"Trials: {len(trials)} run, {len(failed_trials)} failed")
    for trial in failed_trials:
        print(f"  seed {trial.get('seed')}: {str(trial.get('reason') or 'no reason given')[:500]}")
    for title, flags in (("Flags", result.get("flags") or []), ("Task flags", result.get("task_flags") or [])):
        print(f"{title}: {len(flags)}" + ("" if flags else " (none)"))
        for flag in flags:
            print("  " + _flag_line(flag))
    hardware = claimed.get("hardware") or "unknown hardware"
    here = versions.get("gpu") or versions.get("device") or device
    print()
    rows = [("", f"claimed ({hardware})", f"re-measured ({here})")] + comparison_rows(claimed, result)
    widths = [max(len(row[column]) for row in rows) for column in range(3)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    if device == "cpu":
        print("\nNote: the claims were measured on a GPU; CPU timings check the pipeline, not the speedup.")
    if versions:
        print("\nVersions: " + ", ".join(f"{key}={value}" for key, value in sorted(versions.items())))
    print(f"\nFull result: {json_path}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Re-verify the kernel in this bundle.")
    parser.add_argument("--device", choices=("cuda", "cpu"), help="default: cuda when available, else cpu")
    parser.add_argument("--json", type=Path, default=Path("verification_result.json"), help="where to write the result")
    parser.add_argument("--seeds", help="comma-separated trial seeds, to reproduce a run (default: the verifier draws "
                        "them after the kernel has loaded)")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds before the harness is stopped")
    parser.add_argument("--verbose", action="store_true", help="show the harness's own output")
    argv = sys.argv[1:] if argv is None else argv
    harness_extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    args = parser.parse_args(argv[: argv.index("--")] if "--" in argv else argv)

    claims = json.loads((HERE / "claims.json").read_text(encoding="utf-8"))
    device = pick_device(args.device)
    json_path = args.json.resolve()
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.unlink(missing_ok=True)  # never report a stale result from an earlier run
    files = check_files(HERE)
    result = cpu_run_refused(HERE, claims, device)
    if result is None:
        print(f"Running the harness on {device} (building the kernel can take a few minutes)...", flush=True)
        command = harness_command(HERE, claims, device, args.seeds, json_path, harness_extra)
        result = run_harness(command, HERE, json_path, args.timeout, args.verbose)
    result["claims"] = claims
    result["bundle"] = files
    json_path.write_text(json.dumps(result, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
    print_report(claims, result, device, json_path, files)
    return 0 if result.get("verdict") in ("passed", "failed") else NO_VERDICT_EXIT_STATUS


if __name__ == "__main__":
    sys.exit(main())
