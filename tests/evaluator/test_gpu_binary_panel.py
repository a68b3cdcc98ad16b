"""What the GPU ran, on the kernel page: the worker's listing (stored through
evaluator/worker_profiles.py, read by evaluator/selectors.py, shaped by
evaluator/gpu_binary_page.py) from real H200 output (evaluator/demo_archive/gpu_listings_h200.json,
tests/fixtures/h200/gpu_binary/), why a kernel has none, escaping of what comes out of a binary,
and the worker's own step on this host's real toolkit."""
import json
import shutil
import subprocess

import pytest
from django.core.cache import cache
from django.core.management import call_command

from evaluator.selectors import kernel_gpu_binary
from evaluator.worker_profiles import gpu_listings_import, profile_refresh_gpu_binary
from kernels.export.rows import archive_row_batches
from kernels.models import Kernel, Profile, Verification
from kernels.services import archive_import_file, profile_store
from tests.conftest import H200_FIXTURES, REPO_ROOT
from tests.evaluator.gpu_listings import spill_kernel
from verifier import gpu_binary
from verifier.core import build

pytestmark = pytest.mark.django_db
DEMO_LISTINGS = REPO_ROOT / "evaluator" / "demo_archive" / "gpu_listings_h200.json"
FIXTURES = H200_FIXTURES / "gpu_binary"


@pytest.fixture
def archive(archive_path):
    cache.clear()
    archive_import_file(path=archive_path, hardware="NVIDIA H100")


def page(client, kernel) -> str:
    response = client.get(f"/kernels/{kernel.id}/")
    assert response.status_code == 200
    return response.content.decode()


def test_demo_listings_land_on_the_kernels_with_that_code(archive):
    summary = gpu_listings_import(path=DEMO_LISTINGS)
    assert summary["not_here"] == [] and summary["stored"] == 4
    matmul = Kernel.objects.get(name="matmul_shared_tiled_32")
    profile = kernel_gpu_binary(matmul.id)
    assert profile.origin == Profile.Origin.WORKER and "REG:32 STACK:0 SHARED:9344" in profile.raw_text
    assert "raw_res_usage" not in profile.parsed
    assert gpu_listings_import(path=DEMO_LISTINGS)["stored"] == 4  # again: replaced, not added
    assert Profile.objects.filter(kind=Profile.Kind.GPU_BINARY).count() == 4


def test_a_listings_file_with_a_bad_entry_stores_nothing_and_says_which(archive, tmp_path):
    from django.core.management import CommandError, call_command

    document = json.loads(DEMO_LISTINGS.read_text())
    document["kernels"]["zz_broken"] = {"code_sha256": "0" * 64}  # no listing, after good entries
    bad = tmp_path / "listings.json"
    bad.write_text(json.dumps(document))
    with pytest.raises(CommandError, match="zz_broken.*listing object"):
        call_command("import_gpu_listings", str(bad))
    assert not Profile.objects.filter(kind=Profile.Kind.GPU_BINARY).exists()


def test_the_kernel_page_shows_resources_sass_ptx_and_hot_spots(client, archive):
    gpu_listings_import(path=DEMO_LISTINGS)
    matmul = Kernel.objects.get(name="matmul_shared_tiled_32")
    html = page(client, matmul)
    panel = html[html.index('<section id="gpu-binary"'):html.index("</section>", html.index('id="gpu-binary"'))]
    assert html.index('id="kernel-source"') < html.index('id="gpu-binary"')  # beside the source, below it
    assert '<td class="registers">32</td>' in panel
    assert '<td class="shared" title="9344 bytes">9.1 KiB</td>' in panel
    assert '<td class="spill">0 B / 0 B</td>' in panel and '<td class="barriers">1</td>' in panel
    assert '<span class="op">LDC</span> R1, c[0x0][0x28] ;' in panel
    # nvdisasm's line info, mapped from load_inline's cuda.cu onto the kernel's own lines.
    assert '<a href="#L-8">line 8</a>' in panel
    assert "matmul_tiled" in matmul.code.splitlines()[7]
    assert ".visible .entry _Z12matmul_tiledPKfS0_Pfiii" in panel  # the PTX
    # ncu's hot spots: the hottest instruction, its line in the kernel, why it waited.
    hot = panel[panel.index('class="data hot-instructions"'):]
    assert "/*0390*/ STS [R4], R11" in hot and '<a href="#L-17">17</a>' in hot and "long_sb" in hot
    assert 'id="gpu-fn-0-0390"' in panel and 'class="ins hot"' in panel
    lines = panel[panel.index('class="data hot-lines"'):]
    assert '<a href="#L-21">21</a>' in lines  # the tile's multiply-add loop
    assert "As[threadIdx.y][k] * Bs[k][threadIdx.x]" in lines
    # The other demo kernels were not ncu-profiled for source data: said, not left blank.
    softmax = Kernel.objects.get(name="softmax_warp_shuffle_online")
    other = page(client, softmax)
    assert 'id="gpu-hot-spots-missing"' in other and "softmax_rows_shfl" in other
    assert "sm_30_intrinsics.hpp:" in other  # an inlined toolkit header stays a file:line, not a link


def test_the_whole_listing_as_text(client, archive):
    gpu_listings_import(path=DEMO_LISTINGS)
    softmax = Kernel.objects.get(name="softmax_warp_shuffle_online")
    response = client.get(f"/kernels/{softmax.id}/gpu-binary.txt")
    assert response.status_code == 200 and response["Content-Type"] == "text/plain; charset=utf-8"
    text = response.content.decode()
    assert "softmax_rows_shfl(const float *, float *, long, bool)" in text and "## PTX (1646 lines)" in text
    assert text.count("\n/*") >= 1176  # every instruction, where the page shows the first 500 lines
    relu = Kernel.objects.get(name="relu_scalar_small_grid")
    assert client.get(f"/kernels/{relu.id}/gpu-binary.txt").status_code == 404


def test_a_kernel_without_a_listing_says_why(client, archive):
    kernel = Kernel.objects.get(name="relu_scalar_small_grid")
    assert "has not been built on this site&#x27;s GPU worker yet" in page(client, kernel)
    Verification.objects.create(kernel=kernel, status="passed", device="cpu", origin="worker")
    cache.clear()
    assert "only been re-verified on the CPU here" in page(client, kernel)
    Verification.objects.create(kernel=kernel, status="passed", device="cuda", origin="worker")
    cache.clear()
    assert "no listing was kept from its GPU runs here" in page(client, kernel)


def test_a_listing_the_worker_could_not_make_says_so(client, archive):
    kernel = Kernel.objects.get(name="relu_scalar_small_grid")
    profile_store(kernel_id=kernel.id, kind=Profile.Kind.GPU_BINARY, origin=Profile.Origin.WORKER, raw_text="",
                  parsed={"unavailable": "cuobjdump (from the CUDA toolkit) is not installed on this worker"})
    html = page(client, kernel)
    assert "could not list the binary: cuobjdump (from the CUDA toolkit) is not installed on this worker." in html


def test_what_comes_out_of_a_binary_is_escaped(client, archive):
    kernel = Kernel.objects.get(name="relu_scalar_small_grid")
    listing = json.loads((FIXTURES / "listings_spill_and_model_new.json").read_text())["spill_accumulate_96"]
    row = listing["functions"][0]
    row["name"] = "<script>alert('name')</script>"
    row["sass"] = "//## <img src=x onerror=alert(1)>:3\n/*0000*/ LDC <b>R1</b> ;\n<iframe>"
    row["ptx"] = "</pre><script>alert('ptx')</script>"
    listing["hot_spots"] = {"kernels": [{"function": row["name"], "file": "cuda.cu", "launches": 1,
                                         "total_samples": 10, "hot_instructions": [
                                             {"offset": "0000", "sass": "<svg onload=alert(2)>", "line": 3,
                                              "samples": 10, "share": 1.0, "stalls": {"<x>": 10}}],
                                         "hot_lines": [{"line": 3, "source": "<style>", "samples": 10, "share": 1.0}]}]}
    profile_store(kernel_id=kernel.id, kind=Profile.Kind.GPU_BINARY, origin=Profile.Origin.WORKER, raw_text="",
                  parsed=listing)
    html = page(client, kernel)
    for planted in ("<script>alert", "<img src=x", "<b>R1</b>", "<iframe>", "<svg onload", "</pre><script>",
                    "<style>", "<x>"):
        assert planted not in html
    assert "&lt;script&gt;alert(&#x27;ptx&#x27;)&lt;/script&gt;" in html and "&lt;iframe&gt;" in html
    text = kernel_gpu_binary(kernel.id)
    assert text is not None


def test_spills_are_marked(client, archive):
    kernel = spill_kernel()
    html = page(client, kernel)
    assert '<tr class="spills"' in html and '<td class="spill">1556 B / 1668 B</td>' in html
    assert '<td class="stack">1376 B</td>' in html and '<td class="local-ops">374 / 387</td>' in html
    # Its line info lands on its own source: line 6 is the template's declaration.
    assert '<a href="#L-6">line 6</a>' in html and "spill_accumulate" in kernel.code.splitlines()[5]


def test_the_listing_stays_off_the_archive_export_and_the_profile_list(client, archive):
    gpu_listings_import(path=DEMO_LISTINGS)
    matmul = Kernel.objects.get(name="matmul_shared_tiled_32")
    (rows,) = list(archive_row_batches(Kernel.objects.filter(id=matmul.id), archive_compatible=False))
    assert "gpu_binary" not in json.dumps(rows[0], default=str)
    assert "No profiles were imported for this kernel" not in page(client, matmul)


def test_import_command_says_what_it_stored(archive, capsys):
    call_command("import_gpu_listings", str(DEMO_LISTINGS))
    assert "4 listing(s) stored" in capsys.readouterr().out


def test_the_worker_keeps_nothing_from_a_cpu_run(archive, tmp_path):
    kernel = Kernel.objects.get(name="relu_scalar_small_grid")
    assert profile_refresh_gpu_binary(kernel_id=kernel.id, result={"device": "cpu", "verdict": "passed"},
                                      build_dir=tmp_path) is None
    assert profile_refresh_gpu_binary(kernel_id=kernel.id, result={"device": "cuda", "checks": {}},
                                      build_dir=tmp_path) is None  # a failed build: nothing to list
    assert not Profile.objects.filter(kind=Profile.Kind.GPU_BINARY).exists()


def test_the_worker_lists_a_real_gpu_build_with_this_hosts_toolkit(archive, tmp_path):
    """A real sm_90 shared object, built by this host's nvcc where the verifier would have put
    the kernel's extension, and the worker's step on it: listed where the toolkit has cuobjdump,
    else stored as unavailable with the reason (as on a CPU-only machine)."""
    nvcc = shutil.which("nvcc") or gpu_binary.find_tool("nvcc")
    if nvcc is None:
        pytest.skip("no nvcc on this host")
    kernel = Kernel.objects.get(name="relu_scalar_small_grid")
    name = build.extension_name(kernel.code, "cuda", "9.0")
    folder = tmp_path / name
    folder.mkdir()
    device_code = kernel.code.split("torch::Tensor forward")[0].replace("#include <torch/extension.h>", "")
    device_code = "\n".join(line for line in device_code.splitlines() if "c10/cuda" not in line)
    (folder / "cuda.cu").write_text("#include <cstdint>\n" + device_code)
    built = subprocess.run([nvcc, "-shared", "-Xcompiler", "-fPIC", "-O3", "-lineinfo",
                            "-gencode=arch=compute_90,code=sm_90", "-gencode=arch=compute_90,code=compute_90",
                            str(folder / "cuda.cu"), "-o", str(folder / f"{name}.so")], capture_output=True, text=True,
                           timeout=300)
    if built.returncode != 0:
        pytest.skip(f"nvcc could not build here: {built.stderr[-500:]}")
    result = {"device": "cuda", "checks": {"build": {"arch": "9.0", "name": name}}}
    profile = profile_refresh_gpu_binary(kernel_id=kernel.id, result=result, build_dir=tmp_path,
                                         hot_spots={"error": "ncu's source page: exit status 1"})
    assert profile is not None and profile.kind == Profile.Kind.GPU_BINARY
    if gpu_binary.find_tool("cuobjdump") is None:
        assert profile.parsed == {"unavailable": "cuobjdump (from the CUDA toolkit) is not installed on this worker",
                                  "hot_spots": {"error": "ncu's source page: exit status 1"}}
    else:
        (function,) = profile.parsed["functions"]
        assert function["name"].startswith("relu_scalar(") and function["registers"] > 0
        assert function["spill_store_bytes"] == 0 and "//## cuda.cu:" in function["sass"]


def test_a_listing_that_fails_never_fails_the_verification(archive, settings, caplog):
    from evaluator import services
    from verifier.bundle_run import BundleRun

    settings.BUILD_CACHE_DIR = REPO_ROOT / "no-such-build-cache"
    kernel = Kernel.objects.get(name="relu_scalar_small_grid")
    run = BundleRun(result={"device": "cuda", "checks": {"build": "not a dict"}}, phases={})
    services._refresh_gpu_binary(kernel.id, run)  # a malformed result: logged, not raised
    assert run.phases["gpu_binary_s"] >= 0 and "listing the GPU binary of kernel" in caplog.text
    good = BundleRun(result={"device": "cuda", "checks": {"build": {"arch": "9.0"}}}, phases={})
    services._refresh_gpu_binary(kernel.id, good)  # nothing built there: nothing stored
    assert not Profile.objects.filter(kind=Profile.Kind.GPU_BINARY).exists()
