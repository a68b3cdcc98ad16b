"""Dependencies point one way (docs/architecture.md), checked on the source of every module,
function-local imports, relative imports and importlib.import_module("...") calls included.

    archive_site  (settings, URLs, WSGI/ASGI: wires everything; nothing imports it)
        submissions             (researchers' kernels: may import evaluator, kernels, web; only
                                 archive_site's URLs name it, and nothing imports it)
        search    evaluator     (may import kernels, web, verifier; never each other)
            kernels             (the base app: may import web and verifier only)
    web       verifier          (side by side, neither imports the other; web: HTTP plumbing,
                                 Django and DRF, no app; verifier: no Django at all, no app)
    accounts                    (outside the layers: never imports submissions or archive_site;
                                 the apps may import it, web and verifier may not)

A test below writes a module with an upward import and shows the same checker reports it.
"""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("archive_site", "accounts", "submissions", "search", "evaluator", "kernels", "web", "verifier")
DJANGO = ("django", "rest_framework", "drf_spectacular", "drf_spectacular_sidecar", "huey")
# package -> the top-level names its modules must never import
FORBIDDEN = {
    "kernels": {"search", "evaluator", "submissions", "archive_site"},
    "search": {"evaluator", "submissions", "archive_site"},
    "evaluator": {"search", "submissions", "archive_site"},
    # Submissions store through kernels' import service and queue through evaluator's; search never
    # sees an unpublished submission (kernels.selectors.published), so it has nothing to call there.
    "submissions": {"search", "archive_site"},
    "accounts": {"submissions", "archive_site"},  # sign-in and users: placed with the apps, below the site's wiring
    # web is HTTP plumbing and the verifier runs without Django: neither has a use for users
    "web": {"kernels", "search", "evaluator", "submissions", "archive_site", "verifier", "accounts"},
    "verifier": {"kernels", "search", "evaluator", "submissions", "archive_site", "web", "accounts", *DJANGO},
}


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_module_name(node):
    """The literal name in an importlib.import_module("...") call, else None."""
    if (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
            and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
        return node.args[0].value
    return None


def _package_of(path: Path, root: Path) -> list[str]:
    package = _module_name(path, root).split(".")
    return package if path.name == "__init__.py" else package[:-1]


def _from_module(node: ast.ImportFrom, package: list[str]) -> str | None:
    """The module a `from ... import` names; from ..x import y resolved against the module's own package."""
    if node.level:
        base = package[:len(package) - node.level + 1]
        return ".".join(base + ([node.module] if node.module else []))
    return node.module


def imported_modules(path: Path, root: Path):
    """(line, module) for every import in the file, wherever it is written."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = _package_of(path, root)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if _from_module(node, package):
                yield node.lineno, _from_module(node, package)
        elif _import_module_name(node):
            yield node.lineno, _import_module_name(node)


def upward_imports(root: Path) -> list[str]:
    """Every import that breaks FORBIDDEN under `root`, as 'path:line imports module'."""
    found = []
    for package, forbidden in FORBIDDEN.items():
        for path in sorted((root / package).rglob("*.py")):
            for line, module in imported_modules(path, root):
                if module.split(".")[0] in forbidden:
                    found.append(f"{path.relative_to(root)}:{line} imports {module}")
    return found


def test_dependencies_point_one_way():
    assert upward_imports(ROOT) == []


def test_the_checker_reports_an_upward_import(tmp_path):
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "__init__.py").write_text("")
    (tmp_path / "kernels" / "page.py").write_text(
        "import json\n"
        "from . import models\n"
        "def related(kernel_id):\n"
        "    from search.selectors import related_kernels  # hidden in a function\n"
        "    return related_kernels(kernel_id)\n")
    (tmp_path / "kernels" / "sneaky.py").write_text(
        "import importlib\nfrom ..evaluator import services\nimportlib.import_module('archive_site.urls')\n")
    (tmp_path / "evaluator").mkdir()
    (tmp_path / "evaluator" / "tasks.py").write_text("from kernels.models import Kernel\nimport search.services\n")
    (tmp_path / "verifier" / "core").mkdir(parents=True)
    (tmp_path / "verifier" / "core" / "judge.py").write_text("def f():\n    import django.conf\n")
    assert upward_imports(tmp_path) == [
        "kernels/page.py:4 imports search.selectors",
        "kernels/sneaky.py:2 imports evaluator",
        "kernels/sneaky.py:3 imports archive_site.urls",
        "evaluator/tasks.py:2 imports search.services",
        "verifier/core/judge.py:2 imports django.conf",
    ]


# Test modules are pytest's to collect and run, never another module's to import: a helper, constant
# or fixture two test modules share lives in a module beside them named by what it holds
# (tests/evaluator/sample_records.py, tests/verifier/timing_stand_ins.py, ...) or in a conftest.py.
# Importing from a test module ties the importer to that module's other tests, and a test function
# imported by name would be collected (and run) twice.

def imports_of_test_modules(root: Path) -> list[str]:
    """Every import, by a module under tests/, of a test module (tests/**/test_*.py) other than
    itself, as 'path:line imports module': `from .test_x import y`, `from tests.a import test_x`,
    `import tests.a.test_x`, importlib.import_module("tests.a.test_x"), wherever written."""
    test_modules = {_module_name(path, root) for path in (root / "tests").rglob("test_*.py")}
    found = []
    for path in sorted((root / "tests").rglob("*.py")):
        package, names = _package_of(path, root), list(imported_modules(path, root))
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.ImportFrom) and _from_module(node, package):  # y may be a module of x
                names += [(node.lineno, f"{_from_module(node, package)}.{alias.name}") for alias in node.names]
        for line, name in names:
            parts = name.split(".")
            hit = next((".".join(parts[:i]) for i in range(len(parts), 0, -1) if ".".join(parts[:i]) in test_modules),
                       None)
            report = f"{path.relative_to(root)}:{line} imports {hit}"
            if hit and hit != _module_name(path, root) and report not in found:
                found.append(report)
    return sorted(found)


def test_no_test_module_is_imported_by_another_module_of_the_tests():
    assert imports_of_test_modules(ROOT) == []


def test_the_test_module_check_reports_each_way_of_importing_one(tmp_path):
    (tmp_path / "tests" / "evaluator").mkdir(parents=True)
    (tmp_path / "tests" / "browser").mkdir()
    for package in ("tests", "tests/evaluator", "tests/browser"):
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "tests" / "conftest.py").write_text("REPO_ROOT = None\n")
    (tmp_path / "tests" / "evaluator" / "test_overlap.py").write_text(
        "from .timeline import Timeline\nfrom . import timeline\ndef test_a():\n    pass\n")
    (tmp_path / "tests" / "evaluator" / "timeline.py").write_text("class Timeline:\n    pass\n")
    (tmp_path / "tests" / "evaluator" / "test_priority.py").write_text(
        "import json\nfrom tests.conftest import REPO_ROOT\nfrom .test_overlap import Timeline  # noqa: F401\n")
    (tmp_path / "tests" / "evaluator" / "test_cpu_jobs.py").write_text(
        "def helper():\n    from tests.evaluator import test_overlap, timeline\n")
    (tmp_path / "tests" / "browser" / "test_truth.py").write_text(
        "import importlib\nimport tests.evaluator.test_overlap as overlap\n"
        "importlib.import_module('tests.evaluator.test_priority')\n")
    (tmp_path / "tests" / "evaluator" / "helpers.py").write_text("from .test_cpu_jobs import helper\n")
    assert imports_of_test_modules(tmp_path) == [
        "tests/browser/test_truth.py:2 imports tests.evaluator.test_overlap",
        "tests/browser/test_truth.py:3 imports tests.evaluator.test_priority",
        "tests/evaluator/helpers.py:1 imports tests.evaluator.test_cpu_jobs",
        "tests/evaluator/test_cpu_jobs.py:2 imports tests.evaluator.test_overlap",
        "tests/evaluator/test_priority.py:3 imports tests.evaluator.test_overlap",
    ]


def test_every_package_of_the_site_is_under_a_rule():
    """A new top-level package must be placed in the layers (here and in docs/architecture.md)."""
    ignored = {"tests", "bench", "scripts", "docs", "templates", "static", "data"}
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")} - ignored
    assert packages <= set(PACKAGES), packages - set(PACKAGES)


# Each model has one owner app, the only one that writes its rows (through its services);
# others call those services. Verification and VerifierKey are defined in kernels/models.py
# (Kernel.latest_verification points at Verification) but owned by the evaluator.
OWNERS = {"Task": "kernels", "TaskVersion": "kernels", "Kernel": "kernels", "Claim": "kernels",
          "Profile": "kernels", "Verification": "evaluator", "VerifierKey": "evaluator",
          "KernelEmbedding": "search", "MapPoint": "search", "Submission": "submissions"}
WRITES = {"create", "bulk_create", "update", "bulk_update", "update_or_create", "get_or_create", "delete"}


def _model_of(node):
    """The model a call chain such as Model.objects.filter(...).update(...) starts from."""
    while True:
        if isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Attribute):
            if node.attr == "objects" and isinstance(node.value, ast.Name):
                return node.value.id
            node = node.value
        else:
            return None


def foreign_writes(root: Path) -> list[str]:
    found = []
    for package in ("kernels", "search", "evaluator", "submissions", "archive_site", "web", "accounts"):
        for path in sorted((root / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in WRITES:
                    model = _model_of(node.func.value)
                    if model in OWNERS and OWNERS[model] != package:
                        found.append(f"{path.relative_to(root)}:{node.lineno} writes {model} (owned by {OWNERS[model]})")
    return found


def test_each_model_is_written_by_its_owner_app_only():
    assert foreign_writes(ROOT) == []


def test_the_owner_check_reports_a_foreign_write(tmp_path):
    (tmp_path / "evaluator").mkdir()
    (tmp_path / "evaluator" / "services.py").write_text(
        "def f(ids):\n"
        "    Verification.objects.filter(id__in=ids).update(status='queued')\n"
        "    Profile.objects.update_or_create(kernel_id=1, defaults={})\n")
    assert foreign_writes(tmp_path) == ["evaluator/services.py:3 writes Profile (owned by kernels)"]


# The one kind of circle allowed: an app's Huey tasks call its services, and its services enqueue
# those tasks once a transaction commits.
ALLOWED_CIRCLES = [["evaluator.services", "evaluator.tasks"], ["search.services", "search.tasks"]]
# Every package under a rule, the verifier included: sandbox.py and judge_server.py imported each
# other until the child process's limits moved to verifier/core/process_limits.py, which both import
# (issue #36).
CIRCLE_PACKAGES = PACKAGES


def _module_graph(root: Path, packages) -> dict:
    """module -> the modules of `packages` it imports, for the circle check.

    What counts, and why:
    - The unit is the module: one .py file, a package being its __init__.py. A circle bites at
      that grain (a module is half made while its own imports run) and a newcomer changes files.
    - Every import in the file counts, wherever it is written: at module level, in a function or
      class, under if/try (TYPE_CHECKING too), relative or absolute, and importlib.import_module
      with a literal name. A function-local import hides a circle rather than removing it: the two
      modules still need each other, neither can be changed or moved alone, and hoisting the
      import turns it into an ImportError at start-up.
    - `from pkg import name` is an import of the module pkg.name when there is one, else of pkg
      itself (its __init__.py, where the name is defined); `from . import x` likewise.
    - Not counted: the parent packages Python loads before any module (not a circle by itself:
      an __init__.py that imports its own modules is fine until one of them takes a name from
      it, and that import is counted); modules outside `packages` (the standard library, third
      parties, tests/, scripts/); migrations, which Django writes; names in a subprocess's
      command line (`python -m verifier.core.judge`), another process.
    """
    modules = {}
    for package in packages:
        for path in (root / package).rglob("*.py"):
            if "migrations" not in path.parts:
                modules[_module_name(path, root)] = path
    graph = {}
    for name, path in modules.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.ImportFrom):
                base = (".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
                        if node.level else node.module)
                for alias in node.names:  # a module of that name, else the package that defines it
                    targets.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
            elif isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif _import_module_name(node):
                targets.add(_import_module_name(node))
        graph[name] = set()
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                graph[name].add(target)
    return graph


def import_circles(root: Path, packages=CIRCLE_PACKAGES):
    """Strongly connected groups of more than one module (Tarjan), each sorted."""
    graph, index, low, stack, on_stack, circles = _module_graph(root, packages), {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                circles.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(circles)


def test_no_import_circles_but_services_and_their_tasks():
    assert import_circles(ROOT) == sorted(ALLOWED_CIRCLES)


def test_the_circle_check_reads_the_verifier(tmp_path):
    """The circle sandbox.py and judge_server.py had (a module-level import one way, a
    function-local one back) is found among the verifier's modules, in its core/ package too."""
    (tmp_path / "verifier" / "core").mkdir(parents=True)
    (tmp_path / "verifier" / "core" / "sandbox.py").write_text("from . import judge_server\nfrom . import result\n")
    (tmp_path / "verifier" / "core" / "judge_server.py").write_text("def f():\n    from verifier.core import sandbox\n")
    (tmp_path / "verifier" / "core" / "result.py").write_text("import json\n")
    assert import_circles(tmp_path) == [["verifier.core.judge_server", "verifier.core.sandbox"]]


def test_the_verifier_shares_the_child_limits_without_a_circle():
    graph = _module_graph(ROOT, ["verifier"])
    assert "verifier.core.process_limits" in graph["verifier.core.sandbox"] & graph["verifier.core.judge_server"]
    assert graph["verifier.core.process_limits"] == set()
    reached, todo = set(), ["verifier.core.judge_server"]  # nor through the modules it imports
    while todo:
        for target in graph[todo.pop()] - reached:
            reached.add(target)
            todo.append(target)
    assert "verifier.core.sandbox" not in reached


def test_the_circle_check_reports_two_modules_that_import_each_other(tmp_path):
    (tmp_path / "verifier" / "core").mkdir(parents=True)
    (tmp_path / "verifier" / "__init__.py").write_text("")
    (tmp_path / "verifier" / "core" / "__init__.py").write_text("")
    (tmp_path / "verifier" / "core" / "channel.py").write_text("import json\nfrom verifier.core.result import add_flag\n")
    (tmp_path / "verifier" / "core" / "result.py").write_text("from .channel import send\n")
    assert import_circles(tmp_path) == [["verifier.core.channel", "verifier.core.result"]]


def test_a_package_and_its_modules_circle_only_where_a_module_takes_a_name_from_it(tmp_path):
    """Python loads a package before its modules, so an __init__.py that imports its own modules
    is no circle; one of those modules taking a name from that __init__.py is."""
    (tmp_path / "verifier" / "profile_parsers").mkdir(parents=True)
    (tmp_path / "verifier" / "__init__.py").write_text("")
    (tmp_path / "verifier" / "profile_parsers" / "__init__.py").write_text(
        "from verifier.profile_parsers.ncu import parse\nfrom .torch_profile import table\n")
    (tmp_path / "verifier" / "profile_parsers" / "ncu.py").write_text("from . import torch_profile\n")
    (tmp_path / "verifier" / "profile_parsers" / "torch_profile.py").write_text("import re\n")
    assert import_circles(tmp_path) == []
    (tmp_path / "verifier" / "profile_parsers" / "torch_profile.py").write_text(
        "def table():\n    from verifier.profile_parsers import UNITS\n")
    assert import_circles(tmp_path) == [  # ncu imports torch_profile, so it is in the circle too
        ["verifier.profile_parsers", "verifier.profile_parsers.ncu", "verifier.profile_parsers.torch_profile"]]


def test_the_circle_check_sees_a_circle_hidden_in_a_function(tmp_path):
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "page_cache.py").write_text("def f():\n    from .selectors import KEY\n")
    (tmp_path / "kernels" / "selectors.py").write_text("from . import page_cache\n")
    (tmp_path / "kernels" / "views.py").write_text("from .selectors import x\n")
    assert import_circles(tmp_path, ["kernels"]) == [["kernels.page_cache", "kernels.selectors"]]
