"""The verifier is its own package: nothing in it imports Django or the site's apps, so the
bundle runs anywhere torch does. An AST scan of every module, and a real import of each."""
import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN = ("django", "rest_framework", "drf_spectacular", "huey", "kernels", "search", "evaluator",
             "archive_site")


def imported_names(path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module


def forbidden_imports(folder):
    found = []
    for path in sorted(folder.rglob("*.py")):
        for name in imported_names(path):
            if name.split(".")[0] in FORBIDDEN:
                found.append(f"{path.relative_to(folder.parent)} imports {name}")
    return found


def test_no_module_of_the_verifier_imports_django_or_the_apps():
    assert forbidden_imports(ROOT / "verifier") == []


def test_the_scan_sees_an_upward_import(tmp_path):
    bad = tmp_path / "verifier"
    bad.mkdir()
    (bad / "sneaky.py").write_text("def f():\n    from kernels.models import Kernel\n    return Kernel\n")
    assert forbidden_imports(bad) == ["verifier/sneaky.py imports kernels.models"]


def test_importing_every_module_loads_no_django():
    modules = sorted(p.stem for p in (ROOT / "verifier").glob("*.py") if p.stem != "__init__")
    code = ("import sys\n" + "".join(f"import verifier.{m}\n" for m in modules) +
            f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r})\nprint(bad)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"


def relative_imports(path):
    """The sibling modules a verifier module imports (``from . import x``, ``from .x import y``)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                yield node.module.split(".")[0]
            else:
                yield from (alias.name for alias in node.names)


def test_every_module_a_shipped_module_imports_is_shipped():
    """A bundle and the worker's copy of the verifier hold SHIPPED_MODULES alone: a module they
    import that is not in it fails every verification there (judge_clocks.py, split out of
    judge_timing.py, did in a fresh clone's bundle and worker tests before this test)."""
    from verifier import SHIPPED_MODULES

    folder = ROOT / "verifier"
    missing = sorted({f"{name}.py imports {imported}" for name in SHIPPED_MODULES
                      for imported in relative_imports(folder / f"{name}.py")
                      if (folder / f"{imported}.py").exists() and imported not in SHIPPED_MODULES})
    assert missing == []
