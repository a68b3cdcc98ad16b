"""One CPU thread per judge and the torch.compile baseline compiled in the judge, on the H200
(docs/worker.md, "One CPU thread a judge"). The figures as the fixture recorded them
(tests/fixtures/h200/worker_judge_threads_2026_12_01.json)."""
import json
import statistics

import pytest

from tests.conftest import H200_FIXTURES


@pytest.fixture(scope="module")
def data():
    return json.loads((H200_FIXTURES / "worker_judge_threads_2026_12_01.json").read_text())


def judges(probe, variant):
    return {kernel["kernel"]: [j for j in kernel["judges"] if j["variant"] == variant] for kernel in probe["kernels"]}


def test_a_compile_pool_failed_every_honest_kernel_and_compiling_in_the_judge_passes_them(data):
    before, after = data["judge_cpu_probes"]
    for name, runs in judges(before, "default").items():
        assert [run["verdict"] for run in runs] == ["failed"], name
        assert runs[0]["most_processes"] >= 14  # the judge's compile workers, one per CPU
    for name, runs in judges(before, "compile_threads_1").items():
        assert [run["verdict"] for run in runs] == ["passed"], name
    for variant in ("default", "omp_1"):  # 2.4.1: the judge's default compiles in the judge
        for name, runs in judges(after, variant).items():
            assert [run["verdict"] for run in runs] == ["passed", "passed"], (variant, name)
            assert all(run["flags"] == [] and run["most_processes"] <= 4 for run in runs), (variant, name)


def test_one_thread_a_judge_takes_less_than_half_the_cpu(data):
    _, after = data["judge_cpu_probes"]
    default, one = judges(after, "default"), judges(after, "omp_1")
    for name in default:
        cpu_default = statistics.median(run["cpu_s"] for run in default[name])
        cpu_one = statistics.median(run["cpu_s"] for run in one[name])
        wall_default = statistics.median(run["wall_s"] for run in default[name])
        wall_one = statistics.median(run["wall_s"] for run in one[name])
        assert cpu_one < cpu_default, name
        assert wall_one < 1.3 * wall_default, name  # a judge alone on the host is barely slower
        for run in one[name]:  # one thread: its CPU is its wall time, nothing spins beside it
            assert run["cpu_s"] <= 1.05 * run["wall_s"], name
    # the two kernels that check big outputs on the CPU took over twice the CPU with a thread per CPU
    assert sum(statistics.median(r["cpu_s"] for r in default[n]) > 2 * statistics.median(r["cpu_s"] for r in one[n])
               for n in default) == 2


def test_all_42_finished_with_cold_builds_and_408_an_hour_after_the_cold_start(data):
    summary = data["calls"][0]["summary"]
    runs = data["calls"][0]["runs"]
    assert summary["queued"] == summary["kernels"] == len(runs) == 42 and summary["still_open"] == 0
    assert summary["runs_attempted_more_than_once"] == 0 and not summary["kernels_recorded_twice"]
    assert min(run["phases"]["build_s"] for run in runs) > 100  # cold: every build compiled here
    assert summary["kernels_per_hour"] == pytest.approx(3600 * 42 / summary["wall_s"], rel=1e-3)
    assert 300 < summary["kernels_per_hour"] < 400  # the 185/h runs: 18 of these 42 in 351 s
    half = summary["deadline_s"] / 2
    later_half = 3600 * sum(half <= t <= summary["deadline_s"] for t in summary["finished_s"]) / half
    assert later_half > 400
    assert summary["clang_tidy_profiles_stored"] == 42 and summary["clang_tidy_profiles_errored"] <= 1
    assert summary["ncu_profiles_stored"] == summary["status_counts"]["passed"] == 28


def test_the_builds_are_now_half_the_hosts_cpu_and_the_judges_a_twentieth(data):
    rows = {row["kind"]: row for row in data["cpu_by_process"]}
    shares = sorted((row["share_percent"], kind) for kind, row in rows.items() if kind != "all")
    assert shares[-1][1] == "nvcc and host compiler" and shares[-1][0] > 40
    assert shares[-2][1] == "clang-tidy"
    assert rows["judge"]["cpu_s_per_kernel"] < 10 and rows["judge"]["share_percent"] < 6
    assert rows["all"]["cpu_s_per_kernel"] == pytest.approx(
        sum(row["cpu_s"] for kind, row in rows.items() if kind != "all") / 42, rel=0.02)


def test_every_verdict_on_2_4_1_equals_the_rows_earlier_one_but_an_old_false_failure(data):
    rows = data["verifications"]
    assert {row["harness"] for row in rows} == {"2.4.1"} and len({row["harness_sha256"] for row in rows}) == 1
    changed = {row["name"]: (row["earlier"]["verdict"], row["verdict"]) for row in rows
               if row["earlier"]["verdict"] != row["verdict"]}
    # level 1 task 1's large matmul, failed by 2.2.0's unaccounted-time check, as 2.4.0 passed its peers
    assert changed == {"load_balanced_tile_allocation_base": ("failed", "passed")}
    assert all(row["earlier"]["flags"] == row["flags"] for row in rows if row["name"] not in changed)
    assert not any("escaped_process" in row["flags"] for row in rows)
