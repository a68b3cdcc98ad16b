"""Every public function of verifier/ says its types (issue #36): each module-level function and
each method of a public class whose name does not start with "_", and each such class's __init__,
annotates all its parameters but self/cls, *args and **kwargs included, and its return. Other
dunder methods, private classes and functions defined inside functions are left out. Checked on
the source with `ast`, one test per file so the result says which files are done;
verifier/cheat_suite/ holds hostile candidates and is left out, and verifier/functional_forms/ task
data: their text is stored as a task's functional form and shipped verbatim in bundles.

A test below feeds the checker small sources and shows what it reports and what it leaves alone.
"""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VERIFIER = ROOT / "verifier"
LEFT_OUT = {"cheat_suite", "functional_forms"}
FILES = sorted(p for p in VERIFIER.rglob("*.py") if not LEFT_OUT & set(p.relative_to(VERIFIER).parts))
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _public(name: str) -> bool:
    return not name.startswith("_") or name == "__init__"


def _checked(body: list[ast.stmt], in_class: bool):
    """(function, in_class) for the public functions of a module or class body, and those of the
    public classes in it, under if/try/with too (``if TorchDispatchMode is not None: class ...``);
    functions and classes defined inside a function are local, left out."""
    for node in body:
        if isinstance(node, FUNCTIONS):
            if _public(node.name):
                yield node, in_class
        elif isinstance(node, ast.ClassDef):
            if _public(node.name):
                yield from _checked(node.body, True)
        else:
            for block in (getattr(node, "body", None), getattr(node, "orelse", None),
                          getattr(node, "finalbody", None), *(h.body for h in getattr(node, "handlers", ()))):
                if isinstance(block, list):
                    yield from _checked(block, in_class)


def _missing(function: ast.FunctionDef | ast.AsyncFunctionDef, in_class: bool) -> list[str]:
    args = function.args
    positional = args.posonlyargs + args.args
    is_static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in function.decorator_list)
    if in_class and not is_static and positional and positional[0].arg in ("self", "cls"):
        positional = positional[1:]
    params = positional + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a is not None]
    missing = [a.arg for a in params if a.annotation is None]
    if function.returns is None:
        missing.append("return")
    return missing


def unannotated(source: str, filename: str = "<source>") -> list[str]:
    """'filename:line name (what lacks a type)' for every public function or method of `source`
    with a parameter (but self/cls) or a return that has no annotation."""
    tree = ast.parse(source, filename=filename)
    found = []
    for function, in_class in _checked(tree.body, False):
        missing = _missing(function, in_class)
        if missing:
            found.append(f"{filename}:{function.lineno} {function.name} ({', '.join(missing)})")
    return found


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(ROOT)) for p in FILES])
def test_public_functions_are_annotated(path):
    found = unannotated(path.read_text(), str(path.relative_to(ROOT)))
    assert not found, "public functions without annotations:\n" + "\n".join(found)


def test_checker_reports_an_unannotated_public_function():
    source = (
        "def open_channel(path, timeout: float = 1.0):\n"
        "    pass\n"
        "\n"
        "def spread(*values: float, **options) -> float:\n"
        "    return 0.0\n"
        "\n"
        "class Runner:\n"
        "    def __init__(self, budget_s):\n"
        "        self.budget_s = budget_s\n"
        "\n"
        "    def start(self) -> None:\n"
        "        pass\n"
        "\n"
        "    @classmethod\n"
        "    def build(cls, path: str):\n"
        "        return cls(1.0)\n"
        "\n"
        "    @staticmethod\n"
        "    def parse(self) -> None:\n"
        "        pass\n"
        "\n"
        "try:\n"
        "    import torch\n"
        "except ImportError:\n"
        "    def census():\n"
        "        return {}\n"
        "if torch is not None:\n"
        "    class Recorder:\n"
        "        def __init__(self):\n"
        "            self.counts = {}\n"
    )
    assert unannotated(source, "m.py") == [
        "m.py:1 open_channel (path, return)",
        "m.py:4 spread (options)",
        "m.py:8 __init__ (budget_s, return)",
        "m.py:15 build (return)",
        "m.py:19 parse (self)",
        "m.py:25 census (return)",
        "m.py:29 __init__ (return)",
    ]


def test_checker_leaves_annotated_and_private_functions_alone():
    source = (
        "from typing import Any\n"
        "\n"
        "def open_channel(path: str, *args: int, timeout: float = 1.0, **kw: Any) -> None:\n"
        "    def local(x):\n"
        "        return x\n"
        "\n"
        "def _helper(a, b):\n"
        "    return a + b\n"
        "\n"
        "class Runner:\n"
        "    def __init__(self, budget_s: float) -> None:\n"
        "        self.budget_s = budget_s\n"
        "\n"
        "    def __repr__(self):\n"
        "        return 'Runner'\n"
        "\n"
        "    def _step(self, n):\n"
        "        return n\n"
        "\n"
        "    async def wait(self, /, n: int) -> int:\n"
        "        return n\n"
        "\n"
        "class _Private:\n"
        "    def run(self) -> None:\n"
        "        pass\n"
    )
    assert unannotated(source) == []
