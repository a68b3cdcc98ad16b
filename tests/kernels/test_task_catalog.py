"""The task catalog: versions told apart by the code, not by its comments or layout; the
committed catalog is KernelBench's problem set, hashed."""
import pytest

from kernels.catalog_build import build_catalog
from kernels.task_catalog import load_catalog, normalized_reference, problem_files, reference_sha256

REFERENCE = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """Square matrix multiplication."""

    def forward(self, A, B):
        return torch.matmul(A, B)


N = 2048


def get_inputs():
    return [torch.randn(N, N), torch.randn(N, N)]
'''


def test_comments_docstrings_and_layout_do_not_make_a_new_version():
    restyled = (REFERENCE.replace('    """Square matrix multiplication."""\n', "")
                .replace("N = 2048", "N = 2048  # the size of both matrices")
                .replace("\n\n\n", "\n").replace("torch.randn(N, N), torch.randn(N, N)", "torch.randn(N,N),torch.randn(N,N)"))
    assert restyled != REFERENCE
    assert reference_sha256(restyled) == reference_sha256(REFERENCE)


@pytest.mark.parametrize("change", [("N = 2048", "N = 2048 * 2"), ("torch.randn(N, N), ", "torch.rand(N, N), "),
                                    ("torch.matmul(A, B)", "torch.matmul(B, A)")])
def test_a_change_of_the_code_is_a_new_version(change):
    assert reference_sha256(REFERENCE.replace(*change)) != reference_sha256(REFERENCE)


def test_code_that_does_not_parse_is_hashed_by_its_text_without_comments():
    broken = "def f(:\n    return 1  \n# a comment\n\n"
    assert normalized_reference(broken) == "unparsed:def f(:\nreturn 1"
    assert reference_sha256(broken) != reference_sha256(broken.replace("1", "2"))


def test_the_committed_catalog_holds_the_250_tasks_each_with_todays_version():
    catalog = load_catalog()
    assert sorted({level for level, _ in catalog}) == [1, 2, 3]
    assert [sum(1 for level, _ in catalog if level == n) for n in (1, 2, 3)] == [100, 100, 50]
    task = catalog[(1, 1)]
    assert (task.op_name, task.file) == ("1_Square_matrix_multiplication_", "level1/1_Square_matrix_multiplication_.py")
    for entry in catalog.values():
        assert sum(version.current for version in entry.versions) == 1
        assert len({version.sha256 for version in entry.versions}) == len(entry.versions)


def test_the_catalog_is_the_shared_problem_set_hashed(kernelbench_problems_path):
    catalog = load_catalog()
    files = problem_files(kernelbench_problems_path)
    assert set(files) == set(catalog)
    for key, path in files.items():
        current = next(version for version in catalog[key].versions if version.current)
        assert current.sha256 == reference_sha256(path.read_text())
        assert catalog[key].op_name == path.stem
    rebuilt = build_catalog(kernelbench_problems_path)
    assert [(t["level"], t["number"], t["op_name"], t["versions"][0]["sha256"]) for t in rebuilt["tasks"]] == [
        (t.level, t.number, t.op_name, next(v.sha256 for v in t.versions if v.current)) for t in catalog.values()]
