"""What makes kernel pages readable, without a browser: the first compiler error of a build log
placed on its line, NCU numbers in SI units, side-by-side diff rows, two profiles compared,
the histogram's bins, styled error pages in the site's and the API's shapes."""
import json

import pytest
from django.test import RequestFactory

from archive_site import errors
from kernels.build_log import first_build_error
from kernels.charts import speedup_distribution
from kernels.diffing import code_diff
from kernels.ncu_compare import ncu_comparison
from kernels.ncu_format import in_si, shown_spread
from kernels.profile_display import ncu_launch
from tests.conftest import H200_FIXTURES
from verifier.profile_parsers.ncu import parse_ncu_details_csv, parse_ncu_details_text

CODE = "\n".join(f"int line_{n} = {n};" for n in range(1, 30)) + "\n"


def test_first_nvcc_error_is_found_in_a_long_log_and_placed_on_its_line():
    log = ("Using /var/tmp/torch_extensions as PyTorch extensions root...\n"
           "/usr/include/c++/12/bits/stl_algo.h(12): warning: something harmless\n"
           "[1/2] /usr/local/cuda/bin/nvcc -c main.cu ...\n"
           "/tmp/ext/main.cu(17): error: identifier \"line_14\" is undefined\n"
           "      int x = line_14;\n          ^\n"
           "/tmp/ext/main.cu(20): error: a second error\n"
           "2 errors detected in the compilation of \"main.cu\".\n"
           "RuntimeError: Error building extension 'ext'\n")
    code = CODE.replace("int line_14 = 14;", "      int x = line_14;")
    error = first_build_error(log, code)
    # load_inline's three lines of includes: nvcc's line 17 is the kernel's line 14.
    assert (error.kind, error.file, error.line, error.anchor) == ("compile", "main.cu", 14, "L-14")
    assert error.message == 'identifier "line_14" is undefined' and error.log_line == 4


@pytest.mark.parametrize("log, kind, line", [
    ("base.cu(8): error: identifier \"line_8\" is undefined\n", "compile", 8),
    ("kernel.cu:5:10: fatal error: missing.h: No such file or directory\n", "compile", 5),
    ("ptxas error   : Entry function uses too much shared data\n", "ptxas", None),
    ("Error testing CUDA kernel: CUDA error: an illegal memory access was encountered\n", "runtime", None),
])
def test_error_kinds(log, kind, line):
    error = first_build_error(log, CODE)
    assert error.kind == kind and error.line == line


def test_an_error_that_cannot_be_placed_is_not_linked():
    error = first_build_error('main.cu(400): error: identifier "nowhere" is undefined\n', CODE)
    assert error.line is None and error.anchor == "" and first_build_error("", CODE) is None


@pytest.mark.parametrize("value, unit, shown", [
    (185557531438.722, "byte/second", "185.6 GB/s"), (2.36, "Tbyte/s", "2.360 TB/s"),
    (11796480.0, "byte", "11.80 MB"), (48.77, "us", "48.77 µs"), (48770.0, "nsecond", "48.77 µs"),
    (12.468, "%", "12.5 %"), (96488.0, "cycle", "96,488 cycles"), (16.0, "register/thread", "16 registers/thread"),
    (1.97, "Ghz", "1.970 GHz"), (None, "%", "–"),
])
def test_ncu_values_in_si_units(value, unit, shown):
    assert in_si(value, unit) == shown


def test_spread_is_one_standard_deviation_with_the_variance_on_hover():
    spread = shown_spread(8.15177456347205e18, 5, "byte/second")
    assert spread.text == "± 2.855 GB/s" and "8.15177456347205e+18" in spread.raw and "5 launches" in spread.raw
    single = shown_spread(0.0, 1, "byte/second")  # one profiled launch measures no spread: not "± 0"
    assert single.text == "–" and "no spread" in single.raw
    assert shown_spread(0.0, 5, "byte/second").text == "± 0"


def test_launch_configuration_from_ncu_text_and_csv():
    text = (H200_FIXTURES / "ncu_details.txt").read_text()
    shown = {row["label"]: row["shown"] for row in ncu_launch(parse_ncu_details_text(text), text)}
    assert shown["kernel"].startswith("relu_kernel(") and shown["grid"] == "(65536, 1, 1)"
    assert shown["block"] == "(256, 1, 1)" and shown["registers per thread"] == "16 registers/thread"
    assert shown["duration"] == "48.77 µs"
    csv_text = (H200_FIXTURES / "ncu_details_base_units.csv").read_text()
    shown = {row["label"]: row["shown"] for row in ncu_launch(parse_ncu_details_csv(csv_text), csv_text)}
    assert shown["kernel"].startswith("softmax_rows_shfl(") and shown["grid"] == "(128, 1, 1)"
    assert ncu_launch({"metrics": {}}, "{'metrics': {}}") == []  # the archive's profiles have none


def test_two_profiles_compared_mark_real_differences_only():
    def profile(occupancy, ipc, variance=0.0):
        return {"metrics": {"Achieved Occupancy": {"unit": "%", "avg_value": occupancy, "variance": variance, "n": 5},
                            "Executed Ipc Active": {"unit": "inst/cycle", "avg_value": ipc, "variance": 0.0, "n": 5}}}
    sections = ncu_comparison(profile(80.0, 1.0), profile(40.0, 1.05))
    rows = {row["name"]: row for section in sections for row in section["rows"]}
    assert rows["Achieved Occupancy"]["differs"] and rows["Achieved Occupancy"]["direction"] == "higher"
    assert rows["Achieved Occupancy"]["change"] == "+40.0 points"
    assert not rows["Executed Ipc Active"]["differs"]  # 5 %: within the 10 % band
    noisy = ncu_comparison(profile(80.0, 1.0, variance=900.0), profile(40.0, 1.0))
    assert not noisy[0]["rows"][0]["differs"]  # 40 points apart but within twice a 30-point spread


def test_side_by_side_rows_pair_changes_and_escape_the_code():
    old = "int a;\nint b;\n<script>x</script>\nint d;\n"
    new = "int a;\nint B;\n<script>x</script>\nint d;\nint e;\n"
    diff = code_diff(old_code=old, new_code=new, old_label="other", new_label="this", against="x", other_kernel_id=1)
    kinds = [row.kind for row in diff.rows]
    assert kinds == ["same", "changed", "same", "same", "added"] and (diff.added, diff.removed) == (2, 1)
    changed = diff.rows[1]
    assert (changed.old.number, changed.new.number) == (2, 2)
    html = "".join(str(cell.html) for row in diff.rows for cell in (row.old, row.new) if cell)
    assert "<script>" not in html and "&lt;" in html


def test_histogram_has_every_bin_readable_labels_and_a_1x_line():
    histogram = [{"level": 1, "low": 2 ** (-8 / 4), "high": 2 ** (-7 / 4), "kernels": 2},
                 {"level": 2, "low": 2 ** (3 / 4), "high": 1.0, "kernels": 5}]
    figure = speedup_distribution(histogram)
    labels = figure["data"][0]["x"]
    assert len(labels) == 12 and labels[0] == "0.25–0.3×" and labels[-1] == "1.7–2×"  # bins -8 .. 3, none dropped
    assert "0.00" not in "".join(labels)
    line = figure["layout"]["shapes"][0]
    assert line["x0"] == labels.index("1–1.2×") - 0.5  # the boundary where bins reach 1x


def test_error_pages_in_the_site_and_the_api_shape():
    factory = RequestFactory()
    page = errors.not_found(factory.get("/kernels/99999/"), Exception("There is no kernel #99999."))
    assert page.status_code == 404 and b"There is no kernel #99999." in page.content and b'href="/leaderboard/"' in page.content
    api = errors.not_found(factory.get("/api/kernels/99999/"), Exception({"path": "x"}))
    assert api.status_code == 404 and json.loads(api.content) == {"detail": "There is nothing at this address.",
                                                          "code": "not_found", "errors": []}
    assert errors.server_error(factory.get("/")).status_code == 500
    assert json.loads(errors.server_error(factory.get("/api/tasks/")).content)["detail"].startswith("Something went wrong")
    assert errors.bad_request(factory.get("/api/x/")).status_code == 400
