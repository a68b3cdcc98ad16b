"""What the GPU ran (verifier/gpu_binary.py) and where its warps waited
(verifier/profile_parsers/ncu_source.py), read from the CUDA toolkit's real output on an H200
(tests/fixtures/h200/gpu_binary/, made by scripts/gpu_ptx_sass_fixture.sh)."""
import json
import re

import pytest

from tests.conftest import H200_FIXTURES
from verifier import gpu_binary
from verifier.core import build
from verifier.profile_parsers.ncu_source import parse_ncu_source_csv

FIXTURES = H200_FIXTURES / "gpu_binary"
MATMUL = "_Z12matmul_tiledPKfS0_Pfiii"
SPILL = "_Z16spill_accumulateILi96EEvPKfPfi"
DEMO = H200_FIXTURES.parents[2] / "evaluator" / "demo_archive"
# load_inline writes cuda_sources behind these three lines (torch/utils/cpp_extension.py)
LOAD_INLINE_PREAMBLE = "#include <torch/types.h>\n#include <cuda.h>\n#include <cuda_runtime.h>\n"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def demo_code(name: str) -> str:
    for line in (DEMO / "demo_archive.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row["Kernel_Name"] == name:
            return row["CUDA_Code"]
    raise KeyError(name)


def test_resource_usage_per_function_as_the_binary_records_it():
    (matmul,) = gpu_binary.parse_res_usage(fixture("matmul_shared_tiled_32.res-usage.txt"))
    assert matmul == {"arch": "sm_90", "mangled": MATMUL, "registers": 32, "stack_bytes": 0, "shared_bytes": 9344,
                      "local_bytes": 0, "texture": 0, "surface": 0, "sampler": 0, "constant_bytes": {"0": 564}}
    (spill,) = gpu_binary.parse_res_usage(fixture("spill_accumulate_96.res-usage.txt"))
    assert (spill["registers"], spill["stack_bytes"]) == (32, 1376)  # __launch_bounds__(256, 8): 32 registers
    (model_new,) = gpu_binary.parse_res_usage(fixture("honest_model_new_relu_cu.res-usage.txt"))
    assert model_new["arch"] == "sm_90a"  # torch picked the arch itself for the ModelNew's own load_inline


def test_spills_come_from_ptxas_over_the_embedded_ptx():
    matmul = gpu_binary.parse_ptxas_verbose(fixture("matmul_shared_tiled_32.ptxas-v.txt"))[MATMUL]
    assert matmul == {"stack_bytes": 0, "spill_store_bytes": 0, "spill_load_bytes": 0, "registers": 32, "barriers": 1}
    spill = gpu_binary.parse_ptxas_verbose(fixture("spill_accumulate_96.ptxas-v.txt"))[SPILL]
    assert spill == {"stack_bytes": 1376, "spill_store_bytes": 1556, "spill_load_bytes": 1668, "registers": 32,
                     "barriers": 0}


def test_cuobjdump_sass_and_nvdisasm_give_the_same_instructions():
    (dumped,) = gpu_binary.parse_sass(fixture("matmul_shared_tiled_32.sass.txt"))
    (disassembled,) = gpu_binary.parse_nvdisasm(fixture("matmul_shared_tiled_32.nvdisasm-g.txt"))
    assert dumped["mangled"] == disassembled["mangled"] == MATMUL
    assert dumped["arch"] == disassembled["arch"] == "sm_90"
    assert dumped["instructions"] == disassembled["instructions"] == 160

    def instructions(block):
        return [line for line in block["sass"].splitlines() if line.startswith("/*")]

    def opcodes(block):  # branch targets differ: cuobjdump prints addresses, nvdisasm labels
        return [re.sub(r"^/\*[0-9a-f]+\*/ (@!?U?P\w+ )?", "", line).split()[0] for line in instructions(block)]

    assert opcodes(dumped) == opcodes(disassembled)
    assert [line[:8] for line in instructions(dumped)] == [line[:8] for line in instructions(disassembled)]
    assert "/* 0x" not in dumped["sass"]  # the hex encodings are dropped
    assert instructions(dumped)[0] == "/*0000*/ LDC R1, c[0x0][0x28] ;"
    assert any(re.fullmatch(r"/\*[0-9a-f]{4}\*/ BAR\.SYNC.*", line) for line in instructions(dumped))


def test_nvdisasm_line_info_marks_each_run_of_instructions_with_its_source_line():
    (block,) = gpu_binary.parse_nvdisasm(fixture("matmul_shared_tiled_32.nvdisasm-g.txt"))
    assert block["entry"] is True
    lines = block["sass"].splitlines()
    assert lines[:2] == ["//## cuda.cu:11", "/*0000*/ LDC R1, c[0x0][0x28] ;"]
    assert block["files"] == {"cuda.cu": "/tmp/kb_ptx_sass_builds/kb_31977e0d3b9249e18ffb/cuda.cu"}
    assert not any(line.startswith((".section", ".global", ".type", MATMUL)) for line in lines)
    # Inlined helpers name their own files: the warp shuffles come from the toolkit's header.
    listing = json.loads((DEMO / "gpu_listings_h200.json").read_text())["kernels"]["softmax_warp_shuffle_online"]
    (shuffled,) = listing["listing"]["functions"]
    assert "//## sm_30_intrinsics.hpp:" in shuffled["sass"] and "//## cuda.cu:" in shuffled["sass"]
    assert shuffled["line_map"] == {"cuda.cu": -3}  # only the kernel's own file maps onto its lines


def test_a_spilling_kernel_counts_its_local_loads_and_stores():
    (block,) = gpu_binary.parse_sass(fixture("spill_accumulate_96.sass.txt"))  # its first 400 lines
    text = fixture("spill_accumulate_96.sass.txt")
    assert block["mangled"] == SPILL and block["local_stores"] == len(re.findall(r"\bSTL(\.\w+)* \[", text)) > 0
    assert block["local_loads"] == len(re.findall(r"\bLDL(\.\w+)* ", text))
    listing = json.loads(fixture("listings_spill_and_model_new.json"))["spill_accumulate_96"]  # the whole kernel
    (whole,) = listing["functions"]
    assert (whole["local_stores"], whole["local_loads"], whole["instructions"]) == (374, 387, 3648)


def test_ptx_modules_and_entries():
    (module,) = gpu_binary.split_ptx_modules(fixture("matmul_shared_tiled_32.ptx.txt"))
    assert module.startswith(".version 9.0\n.target sm_90")
    assert gpu_binary.ptx_target(module) == "sm_90"
    entries = gpu_binary.ptx_entries(module)
    assert list(entries) == [MATMUL]
    assert entries[MATMUL].splitlines()[0].startswith(".visible .entry " + MATMUL)
    assert entries[MATMUL].rstrip().endswith("}")
    assert "bar.sync" in entries[MATMUL]
    # The ModelNew built its own extension without PTX: nothing to list, nothing made up.
    assert gpu_binary.split_ptx_modules(fixture("honest_model_new_relu_cu.ptx.txt")) == []


def test_this_hosts_ptxas_agrees_with_the_h200s_on_the_same_ptx(tmp_path):
    ptxas = gpu_binary.find_tool("ptxas")
    if ptxas is None:
        pytest.skip("no ptxas (CUDA toolkit) on this host")
    (module,) = gpu_binary.split_ptx_modules(fixture("matmul_shared_tiled_32.ptx.txt"))
    here = gpu_binary._ptxas_resources(ptxas, module, "sm_90", 60)
    assert here["functions"][MATMUL] == gpu_binary.parse_ptxas_verbose(
        fixture("matmul_shared_tiled_32.ptxas-v.txt"))[MATMUL]


def test_line_info_maps_onto_the_kernels_own_lines_only_from_its_build_folder(tmp_path):
    source = demo_code("matmul_shared_tiled_32")
    folder = tmp_path / "kb_build"
    folder.mkdir()
    (folder / "cuda.cu").write_text(LOAD_INLINE_PREAMBLE + source)
    offsets = gpu_binary.source_line_offsets({"cuda.cu": str(folder / "cuda.cu")}, str(folder), source)
    assert offsets == {"cuda.cu": -3}
    assert source.splitlines()[24 + offsets["cuda.cu"] - 1].strip().startswith("for (int k = 0; k < TILE; ++k)")
    # A path the binary names outside its own folder is never read.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "cuda.cu").write_text(LOAD_INLINE_PREAMBLE + source)
    assert gpu_binary.source_line_offsets({"cuda.cu": str(elsewhere / "cuda.cu")}, str(folder), source) == {}
    assert gpu_binary.source_line_offsets({"cuda.cu": str(folder / "cuda.cu")}, str(folder), "other code") == {}


def test_binaries_are_found_from_the_source_not_from_what_the_candidate_said(tmp_path):
    source = demo_code("relu_float4_grid_stride")
    name = build.extension_name(source, "cuda", "9.0")
    (tmp_path / name).mkdir()
    (tmp_path / name / f"{name}.so").write_bytes(b"\x7fELF")
    assert gpu_binary.extension_binaries(source, "cuda_forward", tmp_path, "9.0") == [
        str(tmp_path / name / f"{name}.so")]
    assert gpu_binary.extension_binaries(source, "cuda_forward", tmp_path, "8.0") == []  # another build
    assert gpu_binary.extension_binaries(source, "cuda_forward", tmp_path, "../x") == []
    assert gpu_binary.extension_binaries(source + "\n", "cuda_forward", tmp_path, "9.0") == []


def test_without_the_toolkit_or_a_binary_the_listing_says_why(tmp_path):
    binary = tmp_path / "kb_x.so"
    binary.write_bytes(b"\x7fELF")
    missing = gpu_binary.gpu_binary_listing([binary], search_path=str(tmp_path))
    assert missing == {"unavailable": "cuobjdump (from the CUDA toolkit) is not installed on this worker"}
    assert "no GPU binary" in gpu_binary.gpu_binary_listing([])["unavailable"]


def test_a_tool_that_fails_is_named_and_never_raises(tmp_path):
    tools = tmp_path / "bin"
    tools.mkdir()
    fake = tools / "cuobjdump"  # a real program that fails the way a broken toolkit would
    fake.write_text("#!/bin/sh\necho 'cuobjdump fatal   : Could not open input file' >&2\nexit 1\n")
    fake.chmod(0o755)
    binary = tmp_path / "kb_x.so"
    binary.write_bytes(b"\x7fELF")
    listing = gpu_binary.gpu_binary_listing([binary], search_path=str(tools))
    assert listing["functions"] == [] and "unavailable" not in listing
    assert any("Could not open input file" in problem for problem in listing["problems"])
    json.dumps(listing)


def test_a_tool_that_hangs_is_stopped(tmp_path):
    hang = tmp_path / "cuobjdump"
    hang.write_text("#!/bin/sh\nsleep 30\n")
    hang.chmod(0o755)
    assert gpu_binary._run([str(hang)], 0.5) == {"error": "timed out after 0.5 s"}


def test_the_listing_the_worker_stored_on_the_h200():
    listings = json.loads(fixture("listings_spill_and_model_new.json"))
    (spill,) = listings["spill_accumulate_96"]["functions"]
    assert spill["name"] == "void spill_accumulate<(int)96>(const float *, float *, int)"
    assert (spill["spill_store_bytes"], spill["spill_load_bytes"], spill["ptxas_registers"]) == (1556, 1668, 32)
    assert spill["registers"] == spill["ptxas_registers"]  # the binary and ptxas agree
    assert spill["line_map"] == {"cuda.cu": -3}
    (relu,) = listings["honest_model_new_relu_cu"]["functions"]
    assert relu["arch"] == "sm_90a" and relu["ptx"] == "" and relu["spill_store_bytes"] is None
    worker = json.loads(fixture("worker_path.json"))
    assert worker["verdict"] == "passed" and worker["listing"]["sass_tool"] == "nvdisasm -c -g"
    assert worker["listing"]["functions"][0]["shared_bytes"] == 1024


def test_ncu_hot_spots_by_instruction_and_by_line():
    (kernel,) = parse_ncu_source_csv(fixture("matmul_shared_tiled_32.ncu-source-cuda_sass.csv"))["kernels"]
    assert kernel["function"] == "matmul_tiled(const float *, const float *, float *, int, int, int)"
    assert kernel["file"] == "cuda.cu" and kernel["launches"] == 2 and kernel["instructions"] == 160
    top = kernel["hot_instructions"][0]
    assert (top["offset"], top["sass"], top["line"]) == ("0390", "STS [R4], R11", 20)
    assert max(top["stalls"], key=top["stalls"].get) == "long_sb"  # waiting for its global load
    samples = [spot["samples"] for spot in kernel["hot_instructions"]]
    assert samples == sorted(samples, reverse=True) and len(samples) == 12
    (hottest_line, *_rest) = kernel["hot_lines"]
    assert hottest_line["line"] == 24 and hottest_line["share"] > 0.5  # the tile's multiply-add loop
    assert "As[threadIdx.y][k] * Bs[k][threadIdx.x]" in hottest_line["source"]
    assert sum(line["share"] for line in kernel["hot_lines"]) <= 1.0001
    # The instruction is the listing's own: same offset, same text in the SASS nvdisasm printed.
    (block,) = gpu_binary.parse_nvdisasm(fixture("matmul_shared_tiled_32.nvdisasm-g.txt"))
    assert "/*0390*/ STS [R4], R11 ;" in block["sass"].splitlines()


def test_ncu_sass_only_page_has_instructions_without_lines():
    (kernel,) = parse_ncu_source_csv(fixture("matmul_shared_tiled_32.ncu-source-sass.csv"))["kernels"]
    assert kernel["launches"] == 1 and kernel["hot_lines"] == []
    assert kernel["hot_instructions"][0]["line"] is None and kernel["hot_instructions"][0]["offset"] == "0390"


def test_a_page_without_samples_is_refused():
    with pytest.raises(ValueError):
        parse_ncu_source_csv('"File Name","/x/cuda.cu"\n"Line No","Source"\n"1","#include <cuda.h>"\n')
    with pytest.raises(ValueError):
        parse_ncu_source_csv("")


def test_the_shipped_gpu_build_flags_keep_line_info_and_ptx():
    cflags, cuda_flags, arch = build.build_flags("cuda", "9.0")
    assert "-lineinfo" in cuda_flags and arch == "9.0"
    assert build.build_flags("cpu", "9.0") == (["-O3"], [], None)
