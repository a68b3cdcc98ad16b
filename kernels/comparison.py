"""What the kernel page compares a kernel with, chosen by the reader: the code diff (against the
task's best kernel, the parent, the task's reference or any kernel by id; unified or side by
side) and another kernel's Nsight Compute profile. Reads and assembly; the diff and the profile
tables themselves are kernels/diffing.py and kernels/ncu_compare.py.

Query parameters (all optional, all validated here; a bad one is said on the page, never a 500):
`compare` = best | parent | reference | <kernel id> (or `compare_id` = <kernel id>), `diff` = split | unified,
`ncu_with` = <kernel id>.
"""
from dataclasses import dataclass, field

from django.db.models import Exists, OuterRef
from pygments.lexers import PythonLexer

from .diffing import CodeDiff, code_diff
from .highlight import kernel_lexer
from .models import Kernel, Profile
from .ncu_compare import ncu_comparison
from .selectors import published

DIFF_LAYOUTS = ("split", "unified")
MAX_CHOICES = 300  # kernels of the task offered in the menus; any other is reachable by id


@dataclass
class Comparison:
    target: str  # what was asked for: "best", "parent", "reference" or a kernel id as text
    layout: str
    diff: CodeDiff | None = None
    problem: str = ""  # why there is no diff (no parent, no kernel with that id, ...)
    choices: list[tuple[str, str]] = field(default_factory=list)  # (value, label) for the menu


def task_kernel_menu(kernel: Kernel) -> list[tuple[int, str, bool]]:
    """(id, name, has an NCU profile) of the task's other kernels, for both menus: one query."""
    has_ncu = Exists(Profile.objects.filter(kernel_id=OuterRef("pk"), kind=Profile.Kind.NCU))
    return list(published(Kernel.objects.filter(task_id=kernel.task_id)).exclude(id=kernel.id).order_by("name", "id")
                .annotate(has_ncu=has_ncu).values_list("id", "name", "has_ncu")[:MAX_CHOICES])


def code_comparison(kernel: Kernel, best: Kernel | None, params, menu: list[tuple[int, str, bool]]) -> Comparison:
    layout = params.get("diff") if params.get("diff") in DIFF_LAYOUTS else "split"
    # compare_id (the form's number field) names any kernel and wins over the menu's choice.
    target = ((params.get("compare_id") or "").strip() or (params.get("compare") or "").strip()
              or _default_target(kernel, best))
    comparison = Comparison(target=target, layout=layout, choices=_choices(kernel, best, menu))
    this = f"this kernel #{kernel.id}"
    lexer = kernel_lexer(kernel)
    if target == "reference":
        comparison.diff = code_diff(old_code=kernel.task.reference_code, new_code=kernel.code,
                                    old_label="task reference", new_label=this, against="the task's reference",
                                    other_kernel_id=None, old_lexer=PythonLexer(stripnl=False), new_lexer=lexer)
        return comparison
    other, basis = _other_kernel(kernel, best, target)
    if isinstance(other, str):
        comparison.problem = other
        return comparison
    comparison.diff = code_diff(old_code=other.code, new_code=kernel.code, old_label=f"{basis} #{other.id}",
                                new_label=this, against=_against(target, basis, best), other_kernel_id=other.id,
                                old_lexer=kernel_lexer(other), new_lexer=lexer)
    return comparison


def _default_target(kernel: Kernel, best: Kernel | None) -> str:
    if best is not None and best.id != kernel.id:
        return "best"
    return "parent" if kernel.parent_id else "reference"


def _against(target: str, basis: str, best: Kernel | None) -> str:
    if target == "best":
        return f"the task's best kernel ({best.basis})"
    return "its parent" if target == "parent" else f"kernel {basis}"


def _other_kernel(kernel: Kernel, best: Kernel | None, target: str):
    """(the other kernel, its label), or (a sentence saying why there is none, "")."""
    if target == "best":
        if best is None:
            return "The task has no ranked kernel to compare with.", ""
        if best.id == kernel.id:
            return "This is the task's best kernel.", ""
        return best, "best kernel"
    if target == "parent":
        return (kernel.parent, "parent") if kernel.parent is not None else ("This kernel has no parent.", "")
    if not (target.isascii() and target.isdigit()) or len(target) > 18:
        return f"compare must be best, parent, reference or a kernel id, not {target[:40]!r}.", ""
    # An unpublished submission (kernels.selectors.published) is "no kernel", its code never diffed.
    other = published(Kernel.objects.filter(id=int(target))).only("id", "name", "kind", "code").first()
    if other is None:
        return f"There is no kernel #{int(target)} in the archive.", ""
    if other.id == kernel.id:
        return "That is this kernel.", ""
    return other, other.name


def _choices(kernel: Kernel, best: Kernel | None, menu) -> list[tuple[str, str]]:
    choices = []
    if best is not None and best.id != kernel.id:
        choices.append(("best", f"the task's best kernel: {best.name} (#{best.id})"))
    if kernel.parent_id:
        choices.append(("parent", f"its parent: {kernel.parent.name} (#{kernel.parent_id})"))
    choices.append(("reference", "the task's reference (PyTorch)"))
    choices += [(str(kernel_id), f"{name} (#{kernel_id})") for kernel_id, name, _ in menu]
    return choices


def profile_comparison(kernel: Kernel, ncu_profiles: list[Profile], params, menu) -> dict | None:
    """The NCU comparison the page shows ({other, sections, problem, choices}), or None when this
    kernel has no NCU profile. `ncu_with` picks the other kernel."""
    if not ncu_profiles:
        return None
    choices = [(kernel_id, name) for kernel_id, name, has_ncu in menu if has_ncu]
    view = {"choices": choices, "other": None, "sections": [], "problem": "", "requested": ""}
    requested = (params.get("ncu_with") or "").strip()
    if not requested:
        return view
    view["requested"] = requested
    if not (requested.isascii() and requested.isdigit()) or len(requested) > 18:
        view["problem"] = f"ncu_with must be a kernel id, not {requested[:40]!r}."
        return view
    other = published(Kernel.objects.filter(id=int(requested))).only("id", "name").first()
    profile = ncu_profile_of(int(requested)) if other else None
    if other is None or profile is None:
        view["problem"] = (f"There is no kernel #{int(requested)} in the archive." if other is None
                           else f"Kernel #{other.id} has no Nsight Compute profile.")
        return view
    this = preferred_profile(ncu_profiles)
    view.update(other=other, other_profile=profile, this_profile=this,
                sections=ncu_comparison(this.parsed if isinstance(this.parsed, dict) else {},
                                        profile.parsed if isinstance(profile.parsed, dict) else {}))
    return view


def ncu_profile_of(kernel_id: int) -> Profile | None:
    """A kernel's NCU profile: our worker's when there is one, else the archive's."""
    return preferred_profile(list(Profile.objects.filter(kernel_id=kernel_id, kind=Profile.Kind.NCU)))


def preferred_profile(profiles: list[Profile]) -> Profile | None:
    """Of a kernel's NCU profiles, the one a comparison uses: our worker's, else the archive's."""
    order = {Profile.Origin.WORKER: 0, Profile.Origin.ARCHIVE: 1}
    return min(profiles, key=lambda p: order.get(p.origin, 9)) if profiles else None

