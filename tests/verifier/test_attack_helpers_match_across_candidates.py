"""The attack candidates of the cheat suite carry their helpers as copies: a candidate is one source
file, handed to the judge as it is, so it cannot import a shared module. Each copy sits between

    # --- shared attack helpers (repeated in each attack file: a candidate is one source) ---
    # --- end of shared helpers ---

and a file copies only the helpers it uses (19 of the attack files today, 16 to 268 lines: the
channel forgers, the result-file rewriters, the observer probes, the rhythm detector). So the blocks
differ by design; what must not differ is one helper between two files. Here every top-level
statement of a block (a function, a class, a constant, with the comment lines just above it) must
read the same, character for character, in every candidate that carries it, and no candidate may
define one of those helpers outside its block, where this check would not see it drift.

The files are parsed (ast), never imported: they are hostile code.
"""
import ast
import collections
from pathlib import Path

CANDIDATES = Path(__file__).resolve().parents[2] / "verifier" / "cheat_suite" / "candidates"
START = "# --- shared attack helpers (repeated in each attack file: a candidate is one source) ---"
END = "# --- end of shared helpers ---"


def _name(node) -> str:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name
    if isinstance(node, ast.Assign):
        return " = ".join(ast.unparse(target) for target in node.targets)
    if isinstance(node, ast.AnnAssign):
        return ast.unparse(node.target)
    return ast.unparse(node)  # an import or other statement: named by itself


def marker_errors(folder: Path) -> list[str]:
    """Files whose markers are not exactly one start line followed by one end line."""
    errors = []
    for path in sorted(folder.glob("*.py")):
        lines = path.read_text().splitlines()
        starts, ends = lines.count(START), lines.count(END)
        near = [n for n, line in enumerate(lines, 1) if ("shared attack helpers" in line or "end of shared helpers"
                                                          in line) and line not in (START, END)]
        if near:
            errors.append(f"{path.name}:{near[0]} a marker that is not exactly {START!r} or {END!r}")
        elif (starts, ends) != (0, 0) and ((starts, ends) != (1, 1) or lines.index(START) > lines.index(END)):
            errors.append(f"{path.name}: {starts} start and {ends} end markers")
    return errors


def helper_copies(folder: Path) -> dict[str, dict[str, str]]:
    """helper name -> {file name: its text in that file's block, comment lines above it included}."""
    copies = collections.defaultdict(dict)
    for path in sorted(folder.glob("*.py")):
        lines = path.read_text().splitlines()
        if START not in lines:
            continue
        block = lines[lines.index(START) + 1:lines.index(END)]
        previous_end = 0
        for node in ast.parse("\n".join(block)).body:
            end = node.end_lineno
            text = "\n".join(block[previous_end:end]).strip("\n")
            copies[_name(node)][path.name] = text
            previous_end = end
    return copies


def differing_helpers(folder: Path) -> list[str]:
    """'name: file, file | file' for each helper with more than one text, files grouped by text."""
    found = []
    for name, by_file in sorted(helper_copies(folder).items()):
        texts = collections.defaultdict(list)
        for file_name, text in sorted(by_file.items()):
            texts[text].append(file_name)
        if len(texts) > 1:
            found.append(f"{name}: " + " | ".join(", ".join(files) for files in texts.values()))
    return found


def helpers_outside_blocks(folder: Path) -> list[str]:
    """Top-level definitions, outside the markers, of a name some block defines."""
    names = set(helper_copies(folder))
    found = []
    for path in sorted(folder.glob("*.py")):
        lines = path.read_text().splitlines()
        inside = range(lines.index(START) + 1, lines.index(END) + 1) if START in lines else range(0)
        for node in ast.parse("\n".join(lines)).body:
            if node.lineno not in inside and _name(node) in names:
                found.append(f"{path.name}:{node.lineno} defines {_name(node)} outside the shared block")
    return found


def test_the_markers_of_the_shared_helpers_are_well_formed():
    assert marker_errors(CANDIDATES) == []


def test_each_shared_helper_reads_the_same_in_every_candidate_that_copies_it():
    copies = helper_copies(CANDIDATES)
    assert len(copies) > 10 and max(len(files) for files in copies.values()) > 5  # the check sees the blocks
    assert differing_helpers(CANDIDATES) == []


def test_no_candidate_defines_a_shared_helper_outside_its_block():
    assert helpers_outside_blocks(CANDIDATES) == []


def test_the_check_reports_a_copy_that_drifted(tmp_path):
    def candidate(name, helper_body, tail=""):
        (tmp_path / name).write_text(
            f"import os\n\n{START}\n_LIMIT = 4\n\n\n# what the channel accepts\ndef _send(fd, data):\n"
            f"    {helper_body}\n{END}\n\n\nclass ModelNew:\n    pass\n{tail}")

    candidate("attack_a.py", "return os.write(fd, data)")
    candidate("attack_b.py", "return os.write(fd, data)")
    assert differing_helpers(tmp_path) == [] and helpers_outside_blocks(tmp_path) == []
    candidate("attack_c.py", "return os.write(fd, data[:4096])", tail="\ndef _send(fd, data):\n    pass\n")
    (tmp_path / "attack_d.py").write_text(f"{END}\n{START}\n")
    assert differing_helpers(tmp_path) == ["_send: attack_a.py, attack_b.py | attack_c.py"]
    assert helpers_outside_blocks(tmp_path) == ["attack_c.py:16 defines _send outside the shared block"]
    assert marker_errors(tmp_path) == ["attack_d.py: 1 start and 1 end markers"]
