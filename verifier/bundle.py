"""Verification bundles: one zip with everything needed to re-verify one kernel.

The worker verifies a kernel by running the very bundle a user downloads, and records
the bundle's sha256, so the zip must be byte-for-byte reproducible: fixed file names,
order, timestamps and permissions, and no compression (deflate output can change with
the zlib version, which would make the web host's and the worker's zips differ).

Archive text (kernel names, code, op names) is untrusted: it never chooses a file name
inside the zip, and it appears in README.md only inside a code block it cannot close.
"""
from __future__ import annotations

import hashlib
import io
import json
import math
import re
import zipfile
from pathlib import Path

from verifier.core import shipped_files
from verifier.functional_forms import functional_form_source

BUNDLE_FORMAT_VERSION = 1
CANDIDATE_FILE_BY_KIND = {"cuda_forward": "kernel.cu", "model_new": "model_new.py"}
VERIFIER_DIR = Path(__file__).resolve().parent
VERIFY_SCRIPT = VERIFIER_DIR / "bundle_script.py"
# The claimed numbers we carry, named like Kernel's claimed_* fields without the prefix.
CLAIM_FIELDS = (
    "runtime_ms",
    "native_runtime_ms",
    "compile_runtime_ms",
    "speedup_native",
    "speedup_compile",
    "correct",
    "max_diff",
    "error",
    "hardware",
    "source_archive",
)
_ZIP_DATE_TIME = (1980, 1, 1, 0, 0, 0)  # earliest date a zip can hold
_UNIX = 3
_FILE_MODE = 0o100644
_SCRIPT_MODE = 0o100755
AI_CUDA_ENGINEER_ARCHIVE_URL = "https://huggingface.co/datasets/SakanaAI/AI-CUDA-Engineer-Archive"


def bundle_sha256(bundle: bytes) -> str:
    return hashlib.sha256(bundle).hexdigest()


def build_bundle(*, kernel: dict, task: dict, claimed: dict, verifier_dir: Path = VERIFIER_DIR) -> bytes:
    """The zip's bytes. kernel: name, kind, code; task: level, task_number, op_name,
    reference_code, functional_code (may be empty); claimed: CLAIM_FIELDS (a
    ``claimed_`` prefix is accepted); verifier_dir: the verifier package to ship."""
    return _deterministic_zip(bundle_files(kernel=kernel, task=task, claimed=claimed, verifier_dir=verifier_dir))


def bundle_files(*, kernel: dict, task: dict, claimed: dict, verifier_dir: Path = VERIFIER_DIR) -> dict[str, bytes]:
    """The bundle's files by name, e.g. for a worker that wants them in a folder."""
    kind = kernel.get("kind")
    if kind not in CANDIDATE_FILE_BY_KIND:
        raise ValueError(f"kernel kind must be one of {sorted(CANDIDATE_FILE_BY_KIND)}, got {kind!r}")
    for field, value in (("kernel code", kernel.get("code")), ("task reference_code", task.get("reference_code"))):
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{field} is empty")

    files = {name: data for name, data in _verifier_files(Path(verifier_dir))}
    files["reference.py"] = _text(task["reference_code"])
    functional = task.get("functional_code") or functional_form_source(
        int(task["level"]), int(task["task_number"]), str(task["op_name"])
    )
    if functional:
        files["functional.py"] = _text(functional)
    files[CANDIDATE_FILE_BY_KIND[kind]] = _text(kernel["code"])
    claims = _claims(kernel, task, claimed)
    files["claims.json"] = _text(json.dumps(claims, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
    files["verify.py"] = VERIFY_SCRIPT.read_bytes()
    files["README.md"] = _text(_readme(claims, has_functional="functional.py" in files))
    files["SHA256SUMS"] = _text(
        "".join(f"{hashlib.sha256(data).hexdigest()}  {name}\n" for name, data in sorted(files.items()))
    )
    return dict(sorted(files.items()))


def _verifier_files(verifier_dir: Path) -> list[tuple[str, bytes]]:
    """What a verification runs: the verifier's ``__init__.py`` and every module of its ``core/``
    (``verifier.core.shipped_files``, which the judge's ``versions.harness_sha256`` covers too), as
    ``verifier/...``: the bundle runs ``python -m verifier.core.judge`` exactly as the worker does."""
    missing = [name for name in ("__init__.py", "core/__init__.py", "core/judge.py")
               if not (verifier_dir / name).is_file()]
    if missing:
        raise FileNotFoundError(f"the verifier in {verifier_dir} lacks {', '.join(missing)}")
    return [(f"verifier/{name}", (verifier_dir / name).read_bytes()) for name in shipped_files(str(verifier_dir))]


def _text(value: str) -> bytes:
    # Lone surrogates cannot be stored as UTF-8 nor compiled; replace rather than fail.
    return value.encode("utf-8", errors="replace")


def _json_safe(value):
    """JSON has no NaN or infinity; an archive's NaN claim becomes null rather than invalid JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def _claims(kernel: dict, task: dict, claimed: dict) -> dict:
    numbers = {key.removeprefix("claimed_"): value for key, value in claimed.items()}
    if "error" not in numbers and "error_text" in numbers:
        numbers["error"] = numbers.pop("error_text")
    unknown = sorted(set(numbers) - set(CLAIM_FIELDS))
    if unknown:
        raise ValueError(f"unknown claimed field(s): {', '.join(unknown)}; expected some of {', '.join(CLAIM_FIELDS)}")
    return {
        "bundle_format": BUNDLE_FORMAT_VERSION,
        "kernel": {"name": str(kernel.get("name", "")), "kind": kernel["kind"], "file": CANDIDATE_FILE_BY_KIND[kernel["kind"]]},
        "task": {"level": int(task["level"]), "task_number": int(task["task_number"]), "op_name": str(task["op_name"])},
        "claimed": {field: _json_safe(numbers.get(field)) for field in CLAIM_FIELDS},
    }


def _deterministic_zip(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, date_time=_ZIP_DATE_TIME)
            info.compress_type = zipfile.ZIP_STORED
            info.create_system = _UNIX
            info.external_attr = (_SCRIPT_MODE if name == "verify.py" else _FILE_MODE) << 16
            archive.writestr(info, files[name])
    return buffer.getvalue()


def _literal_block(lines: list[str]) -> str:
    """A fenced code block that untrusted text cannot escape: control characters are
    dropped and the fence is longer than any run of backticks inside."""
    cleaned = [re.sub(r"[\x00-\x1f\x7f]+", " ", line)[:300] for line in lines]
    longest_run = max((len(run) for line in cleaned for run in re.findall(r"`+", line)), default=0)
    fence = "`" * max(3, longest_run + 1)
    return "\n".join([fence + "text", *cleaned, fence])


def _credit(source_archive: str) -> str:
    if re.search(r"sakana|ai[ _-]?cuda[ _-]?engineer", source_archive, re.IGNORECASE):
        return (
            "The kernel, its reference task and the claimed numbers come from the **AI CUDA Engineer\n"
            f"Archive** by Sakana AI ({AI_CUDA_ENGINEER_ARCHIVE_URL}), licensed under\n"
            "CC-BY-4.0 (https://creativecommons.org/licenses/by/4.0/). Changes: the row's fields were\n"
            "split into the files above, and a functional form of the task may have been added.\n"
        )
    return (
        "The kernel and the claimed numbers come from the source archive named above; see that\n"
        "archive for its licence and terms.\n"
    )


def _readme(claims: dict, *, has_functional: bool) -> str:
    kernel, task, claimed = claims["kernel"], claims["task"], claims["claimed"]
    source_archive = str(claimed.get("source_archive") or "unknown")
    identity = _literal_block(
        [
            f"kernel: {kernel['name']}",
            f"kind: {kernel['kind']}",
            f"task: level {task['level']}, task {task['task_number']}, {task['op_name']}",
            f"source archive: {source_archive}",
            f"claimed on: {claimed.get('hardware') or 'unknown hardware'}",
        ]
    )
    functional_line = (
        "- `functional.py`: the task as `module_fn` plus `Model.forward(..., fn=module_fn)`; the\n"
        "  kernel is called in place of `module_fn`, with the model's weights as arguments.\n"
        if has_functional
        else ""
    )
    return f"""# Verification bundle

Everything needed to re-check one machine-generated kernel on your own machine: the
verifier that decides whether it is correct and how fast it is, the task it claims to
solve, the kernel itself, and what its archive claimed.

{identity}

## The one command

    python verify.py

It needs Python 3.10+ and PyTorch (plus a CUDA toolkit for CUDA kernels). It uses the
GPU when torch sees one and the CPU otherwise; `--device cuda|cpu` forces either and
`--json result.json` chooses where the full result is written. It prints the verdict,
every flag with its evidence, and the claimed numbers beside the re-measured ones.
Only kernels written as plain C++ run on the CPU, and CPU timings say nothing about the
claimed GPU speedup: a CUDA kernel on the CPU stops at once, saying it needs a CUDA device and
what torch found here (verdict error, exit status 2). Options after `--` go to the verifier (`python -m verifier.core.judge`) unchanged (for example
`python verify.py -- --build-dir /tmp/kernel-builds`). Exit status 0 means a verdict
(passed or failed) was reached, 2 that none could be.

## Files

- `verify.py`: runs the verifier in a subprocess and compares its result with the claims.
- `verifier/`: the verifier (its modules in `verifier/core/`), the same files the site's GPU workers
  run: a judge that never runs the kernel, and a confined runner that does and only reports evidence to it.
- `reference.py`: the task's reference `Model`, `get_inputs` and `get_init_inputs`.
{functional_line}- `{kernel['file']}`: the kernel's source, exactly as archived.
- `claims.json`: the archive's claimed runtime, baselines, speedups, correctness and max diff.
- `SHA256SUMS`: a checksum per file (`sha256sum -c SHA256SUMS`); verify.py checks it too.

## What the verifier checks

The kernel cannot write its own verdict: the judge never loads it. A separate runner process
loads it, confined (no network, writes only to its build and scratch folders, no signals
to the judge, no processes left behind, where this machine's Linux allows each; the result
says which held), and answers the judge's requests. The judge draws the test inputs after
the kernel has loaded, computes the reference outputs itself and compares: on several
seeds, with the kernel running before and after the reference on a poisoned allocator (so
leftover reference output cannot pass), inputs left untouched, outputs of the right shape
and dtype, errors measured against a recorded tolerance, weak tasks flagged. The runner's
own probes (streams, threads, patched timers, library calls, reduced precision) can only
fail a kernel. Timing: the kernel in the runner and the eager and `torch.compile` references
in the judge, in interleaved batches with L2 flushes and CUDA events; every timed call gets
new inputs and its output is fingerprinted and checked, one per batch in full, and the
judge's own clock must account for the reported times. Every finding is a flag with its
evidence in the result JSON; blocking flags fail the kernel.

## Is this the bundle that was verified?

The kernel's page shows, for each verification, the whole sha256 of the bundle it ran (in
its verification history, column "Bundle sha256"). A signed record whose signer named no
bundle (bundle_sha256 left empty, as in the project's own H200 records) says so there; its
harness sha256 still names the verifier files that ran. Compare it with your copy's:

    sha256sum bundle.zip          # Linux
    shasum -a 256 bundle.zip      # macOS
    python -c "import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], 'rb').read()).hexdigest())" bundle.zip

## Credit

{_credit(source_archive)}
Reference tasks follow KernelBench (https://github.com/ScalingIntelligence/KernelBench).
"""
