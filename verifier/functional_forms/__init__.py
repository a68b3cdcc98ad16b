"""Functional forms of the sample tasks, in the AI CUDA Engineer Archive's style.

Archive kernels of levels 2 and 3 take the module's weights as arguments
(``forward(x, conv_weight, conv_bias, bias)``), so verifying them needs a functional
form of the task: ``module_fn`` on explicit tensors and a ``Model`` whose
``forward(*inputs, fn=module_fn)`` lets the harness substitute the kernel. The archive
subset we ship lacks its ``PyTorch_Code_Functional`` column; these files fill the gap
for the sample tasks. Each file is self-contained because it is shipped verbatim as
``functional.py`` inside verification bundles.
"""
from __future__ import annotations

import ast
from pathlib import Path

FORMS_DIR = Path(__file__).resolve().parent

# (level, task number) -> file name. The op name is read from the file itself so the
# two can never disagree.
_FORM_FILES = {
    (1, 1): "level1_task1.py",
    (2, 1): "level2_task1.py",
    (3, 1): "level3_task1.py",
}


def _op_name_of(source: str) -> str:
    """The module-level OP_NAME string constant, read without executing the file."""
    for node in ast.parse(source).body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == "OP_NAME"
            and isinstance(node.value, ast.Constant)
        ):
            return node.value.value
    raise ValueError("functional form has no OP_NAME constant")


def known_forms() -> list[tuple[int, int, str]]:
    """(level, task number, op name) of every functional form we ship, sorted."""
    forms = []
    for (level, task), file_name in sorted(_FORM_FILES.items()):
        source = (FORMS_DIR / file_name).read_text(encoding="utf-8")
        forms.append((level, task, _op_name_of(source)))
    return forms


def functional_form_source(level: int, task: int, op_name: str) -> str | None:
    """The form's source text when level, task AND op name all match, else None.

    The op name must match too: task numbers are reused across benchmark versions, and
    a form for a different op would silently verify kernels against the wrong maths.
    """
    file_name = _FORM_FILES.get((level, task))
    if file_name is None:
        return None
    source = (FORMS_DIR / file_name).read_text(encoding="utf-8")
    if _op_name_of(source) != op_name:
        return None
    return source


def write_row_sources(folder: Path, row: dict) -> tuple[Path, Path, Path | None]:
    """An archive row (AI CUDA Engineer schema) as the judge's input files in ``folder``:
    reference.py, kernel.cu and, where a form is known for its task, functional.py."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "reference.py").write_text(row["PyTorch_Code_Module"])
    (folder / "kernel.cu").write_text(row["CUDA_Code"])
    form = functional_form_source(row["Level_ID"], row["Task_ID"], row["Op_Name"])
    if form:
        (folder / "functional.py").write_text(form)
    return folder / "reference.py", folder / "kernel.cu", (folder / "functional.py") if form else None
