"""The verification bundle of an archived kernel, built from its rows (verifier/bundle.py builds
it): what users download and what the worker runs."""
from django.http import HttpResponse

from kernels.models import Kernel

from verifier.bundle import build_bundle, bundle_sha256


def bundle_for_kernel(kernel: Kernel) -> bytes:
    task = kernel.task
    return build_bundle(
        kernel={"name": kernel.name, "kind": kernel.kind, "code": kernel.code},
        task={
            "level": task.level, "task_number": task.task_number, "op_name": task.op_name,
            "reference_code": kernel.reference_code, "functional_code": task.functional_code,
        },
        claimed={
            "runtime_ms": kernel.claimed_runtime_ms,
            "native_runtime_ms": kernel.claimed_native_runtime_ms,
            "compile_runtime_ms": kernel.claimed_compile_runtime_ms,
            "speedup_native": kernel.claimed_speedup_native,
            "speedup_compile": kernel.claimed_speedup_compile,
            "correct": kernel.claimed_correct,
            "max_diff": kernel.claimed_max_diff,
            "error": kernel.error_text,
            "hardware": kernel.hardware,
            "source_archive": kernel.source_archive,
        },
    )


def bundle_filename(kernel: Kernel) -> str:
    # Never derived from the archive's kernel name: that text is untrusted.
    return f"kernel-{kernel.id}-bundle.zip"


def bundle_download_response(kernel: Kernel) -> HttpResponse:
    bundle = bundle_for_kernel(kernel)
    response = HttpResponse(bundle, content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="{bundle_filename(kernel)}"'
    response["X-Bundle-SHA256"] = bundle_sha256(bundle)
    return response


__all__ = ["bundle_for_kernel", "bundle_download_response", "bundle_filename", "bundle_sha256"]
