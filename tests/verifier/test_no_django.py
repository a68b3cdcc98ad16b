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
    packages = {"verifier": ROOT / "verifier", "verifier.core": ROOT / "verifier" / "core"}
    modules = sorted(f"{package}.{p.stem}" for package, folder in packages.items()
                     for p in folder.glob("*.py") if p.stem != "__init__")
    code = ("import sys\n" + "".join(f"import {m}\n" for m in modules) +
            f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r})\nprint(bad)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"


def verifier_imports(path, package):
    """(line, module) for every import of the package ``verifier`` in the file (absolute, or relative
    to ``package``, the file's own package as a list of names), wherever it is written;
    ``from verifier import x`` names verifier.x."""
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names if alias.name.split(".")[0] == "verifier")
        elif isinstance(node, ast.ImportFrom):
            base = (".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
                    if node.level else node.module or "")
            if base.split(".")[0] == "verifier":
                yield from ((node.lineno, base if base != "verifier" else f"verifier.{alias.name}")
                            for alias in node.names)


def imports_outside_core(folder):
    """Every import of a verifier module outside core/ by a file that ships: a module of
    ``folder``/core/ or ``folder``/__init__.py (``folder``: the package verifier), as 'path:line imports
    module'. What ships is core/ alone (verifier.core.shipped_files), so such an import fails every
    verification in a bundle and in the worker, which runs the bundle."""
    found = []
    shipped = [(folder / "__init__.py", ["verifier"])] + [
        (path, ["verifier", "core"]) for path in sorted((folder / "core").glob("*.py"))]
    for path, package in shipped:
        if not path.exists():
            continue
        for line, module in verifier_imports(path, package):
            if module != "verifier.core" and not module.startswith("verifier.core."):
                found.append(f"{path.relative_to(folder.parent)}:{line} imports {module}")
    return found


def test_no_shipped_module_imports_a_verifier_module_outside_core():
    """A bundle holds verifier/__init__.py and verifier/core/ alone: a module outside core/ that one
    of them imports fails every verification there (judge_clocks.py, split out of judge_timing.py,
    did in a fresh clone's bundle and worker tests when the bundle's modules were a list)."""
    assert imports_outside_core(ROOT / "verifier") == []


def test_the_core_check_sees_an_import_of_the_tooling_around_core(tmp_path):
    folder = tmp_path / "verifier"
    (folder / "core").mkdir(parents=True)
    (folder / "__init__.py").write_text("from .bundle import build_bundle\n")
    (folder / "core" / "judge.py").write_text(
        "from . import build\nfrom .timing import clock\nfrom verifier.core import result\n"
        "def f():\n    from .. import ncu_profile\n    from verifier import gpu_binary\n")
    (folder / "core" / "runner.py").write_text("import verifier.profile_driver\nfrom ..core import channel\n")
    assert imports_outside_core(folder) == [
        "verifier/__init__.py:1 imports verifier.bundle",
        "verifier/core/judge.py:5 imports verifier.ncu_profile",
        "verifier/core/judge.py:6 imports verifier.gpu_binary",
        "verifier/core/runner.py:1 imports verifier.profile_driver",
    ]
