"""The demo's archive as `make demo` loads it: the Makefile's `import` target, command for command
(the shared sample when it is there, the demo archive, the shipped signed H200 results)."""
from pathlib import Path

from django.core.management import call_command

from tests.conftest import SAMPLE_ARCHIVE

REPO = Path(__file__).resolve().parents[2]


def load_like_make_demo():
    """The Makefile's `import` target, command for command."""
    if SAMPLE_ARCHIVE.exists():
        call_command("import_archive", str(SAMPLE_ARCHIVE), hardware="NVIDIA H100", no_progress=True)
    call_command("import_archive", str(REPO / "evaluator" / "demo_archive" / "demo_archive.jsonl"), no_progress=True)
    call_command("import_verifications", str(REPO / "evaluator" / "h200_results" / "demo_archive_h200.jsonl"))
    if SAMPLE_ARCHIVE.exists():
        call_command("import_verifications", str(REPO / "evaluator" / "h200_results" / "sample_subset_h200.jsonl"))
