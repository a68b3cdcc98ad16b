"""Turn what scripts/gpu_ptx_sass_fixture.sh brought back from the H200 into the repository's files:

- tests/fixtures/h200/gpu_binary/: the toolkit's raw output for the parsers' tests (small files
  whole, long ones cut to their first lines, said in the README there), ncu's source page of
  the matmul (its first two launches), the listings of the kernel that spills (with its source)
  and of the ModelNew (their SASS and PTX cut to 200 lines), and the worker path's summary;
- evaluator/demo_archive/gpu_listings_h200.json: the listings of the four demo kernels as the
  worker stores them (verifier/gpu_binary.py, whole), the matmul's with its ncu hot spots
  (verifier/profile_parsers/ncu_source.py over the source page of its report), which
  `manage.py import_gpu_listings` loads for `make demo`.

    python scripts/gpu_ptx_sass_fixture_trim.py RAW_DIR RESULTS_DIR
        RAW_DIR: raw/ of the first call (tool outputs, --raw); RESULTS_DIR: the second call's
        unpacked tarball (raw/ with the ncu pages, results/ with the listings)
"""
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from verifier.profile_parsers.ncu_source import parse_ncu_source_csv  # noqa: E402

FIXTURES = REPO / "tests" / "fixtures" / "h200" / "gpu_binary"
DEMO_FILE = REPO / "evaluator" / "demo_archive" / "gpu_listings_h200.json"
DEMO_KERNELS = ("matmul_shared_tiled_32", "softmax_block_per_row_shared", "softmax_warp_shuffle_online",
                "relu_float4_grid_stride")
# (source in RAW_DIR, name here, lines kept or None for all)
RAW_FILES = [
    ("versions.txt", "versions.txt", None),
    ("matmul_shared_tiled_32.cuobjdump-res-usage.txt", "matmul_shared_tiled_32.res-usage.txt", None),
    ("matmul_shared_tiled_32.cuobjdump-sass.txt", "matmul_shared_tiled_32.sass.txt", None),
    ("matmul_shared_tiled_32.cuobjdump-ptx.txt", "matmul_shared_tiled_32.ptx.txt", None),
    ("matmul_shared_tiled_32.nvdisasm_c_g.txt", "matmul_shared_tiled_32.nvdisasm-g.txt", None),
    ("matmul_shared_tiled_32.ptxas-v.txt", "matmul_shared_tiled_32.ptxas-v.txt", None),
    ("spill_accumulate_96.cuobjdump-res-usage.txt", "spill_accumulate_96.res-usage.txt", None),
    ("spill_accumulate_96.ptxas-v.txt", "spill_accumulate_96.ptxas-v.txt", None),
    ("spill_accumulate_96.cuobjdump-sass.txt", "spill_accumulate_96.sass.txt", 400),
    ("spill_accumulate_96.cuobjdump-ptx.txt", "spill_accumulate_96.ptx.txt", 200),
    ("honest_model_new_relu_cu.cuobjdump-res-usage.txt", "honest_model_new_relu_cu.res-usage.txt", None),
    ("honest_model_new_relu_cu.cuobjdump-ptx.txt", "honest_model_new_relu_cu.ptx.txt", None),
]


def head(text: str, lines: int | None) -> str:
    return text if lines is None else "\n".join(text.splitlines()[:lines]) + "\n"


def first_launches(text: str, launches: int) -> str:
    kept, seen = [], 0
    for line in text.splitlines():
        if line.startswith(('"File Path"', '"Kernel Name"')):
            seen += 1
            if seen > launches:
                break
        kept.append(line)
    return "\n".join(kept) + "\n"


def trimmed_listing(listing: dict, lines: int) -> dict:
    listing = json.loads(json.dumps(listing))
    for row in listing.get("functions", []):
        for key in ("sass", "ptx"):
            row[key] = "\n".join(row[key].splitlines()[:lines])
    listing["fixture_trimmed_to_lines"] = lines
    return listing


def main(raw_dir: Path, second: Path):
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for source, name, lines in RAW_FILES:
        (FIXTURES / name).write_text(head((raw_dir / source).read_text(), lines))
    page = (second / "raw" / "matmul_shared_tiled_32.ncu-source-cuda_sass.csv").read_text()
    (FIXTURES / "matmul_shared_tiled_32.ncu-source-cuda_sass.csv").write_text(first_launches(page, 2))
    sass_page = (second / "raw" / "matmul_shared_tiled_32.ncu-source-sass.csv").read_text()
    (FIXTURES / "matmul_shared_tiled_32.ncu-source-sass.csv").write_text(first_launches(sass_page, 1))
    sys.path.insert(0, str(REPO / "scripts"))
    from gpu_ptx_sass_fixture import SPILL_SOURCE

    (FIXTURES / "spill_accumulate_96.cu").write_text(SPILL_SOURCE)
    listings = json.loads((second / "results" / "listings.json").read_text())
    (FIXTURES / "listings_spill_and_model_new.json").write_text(json.dumps(
        {name: trimmed_listing(listings[name], 200) for name in ("spill_accumulate_96", "honest_model_new_relu_cu")},
        indent=1) + "\n")
    worker = json.loads((second / "results" / "worker_path.json").read_text())
    summary = {key: worker[key] for key in ("kernel", "verdict", "phases", "flags", "arch", "binaries")}
    summary["ncu"] = {key: worker["ncu"].get(key) for key in ("wall_s", "command")}
    summary["ncu"]["source_page_read"] = "error" not in (worker["ncu"].get("source_hot_spots") or {"error": 1})
    summary["listing"] = {key: worker["listing"][key] for key in ("version", "tools", "arch", "sass_tool", "problems")}
    summary["listing"]["functions"] = [{key: value for key, value in row.items() if key not in ("sass", "ptx")}
                                       for row in worker["listing"]["functions"]]
    (FIXTURES / "worker_path.json").write_text(json.dumps(summary, indent=1) + "\n")
    hot = parse_ncu_source_csv(page)
    hot["command"] = "ncu --import profile.ncu-rep --csv --page source --print-source cuda,sass"
    demo = {}
    for name in DEMO_KERNELS:
        listing = dict(listings[name])
        if name == "matmul_shared_tiled_32":
            listing["hot_spots"] = hot
        demo[name] = {"code_sha256": listing.pop("source_sha256"), "listing": listing}
    DEMO_FILE.write_text(json.dumps({
        "about": "What the GPU ran for four demo kernels: built on an NVIDIA H200 by verifier/core/build.py "
                 "(CUDA 13.0, torch 2.11.0+cu130), listed by verifier/gpu_binary.py; the matmul's hot spots "
                 "from ncu 2025.3.1's SourceCounters (5 launches) read by verifier/profile_parsers/ncu_source.py. "
                 "Made by scripts/gpu_ptx_sass_fixture.sh and scripts/gpu_ptx_sass_fixture_trim.py; loaded by "
                 "`manage.py import_gpu_listings` (make demo).",
        "gpu": "NVIDIA H200", "kernels": demo}, indent=1) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
