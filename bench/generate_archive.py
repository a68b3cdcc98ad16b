"""Scale a real archive sample to N rows of the same schema, for benchmarks.

Each generated row starts from a real row and varies what a real archive varies: the
kernel's code (renamed identifiers, other tile and block sizes, an extra comment), its
name, its task (spread over KernelBench's 100/100/50 tasks of levels 1-3) and its
numbers (runtimes jittered, speedups recomputed as baseline / runtime). Profiles are the
real ones. Usage: python bench/generate_archive.py --rows 30000 --out /tmp/archive30k.jsonl
"""
import argparse
import json
import random
import re
import sys
from pathlib import Path

DEFAULT_SAMPLE = Path(__file__).resolve().parents[2] / "shared" / "data" / "sakana_archive_subset.jsonl"
TASKS_PER_LEVEL = {1: 100, 2: 100, 3: 50}
TECHNIQUE_WORDS = ["tiled", "vectorized", "warp_shfl", "shared_mem", "unrolled", "coalesced", "fused", "async"]
_NUMBER = re.compile(r"(#define\s+\w+\s+)(\d+)")


def load_sample(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def vary_row(row: dict, index: int, rng: random.Random, reference_variants: int = 1) -> dict:
    level = row["Level_ID"]
    task = 1 + (index * 7919 + level) % TASKS_PER_LEVEL[level]
    out = dict(row)
    out["Task_ID"] = task
    out["Op_Name"] = f"{task}_{row['Op_Name'].split('_', 1)[1]}" if task != 1 else row["Op_Name"]
    word = rng.choice(TECHNIQUE_WORDS)
    out["Kernel_Name"] = f"{word}_{row['Kernel_Name']}_g{index}"
    code = _NUMBER.sub(lambda m: m.group(1) + str(rng.choice([8, 16, 32, 64, 128, 256])), row["CUDA_Code"])
    out["CUDA_Code"] = f"// generated variant {index}: {word}\n" + code
    if row["CUDA_Runtime"] is not None:
        runtime = row["CUDA_Runtime"] * rng.uniform(0.5, 1.6)
        out["CUDA_Runtime"] = runtime
        # A baseline the row did not measure (null) keeps its null speedup.
        for baseline, speedup in (("PyTorch_Native_Runtime", "CUDA_Speedup_Native"),
                                  ("PyTorch_Compile_Runtime", "CUDA_Speedup_Compile")):
            if row[baseline] is not None:
                out[speedup] = row[baseline] / runtime
    out["__index_level_0__"] = index
    variant = (index // 7) % reference_variants
    if variant:  # another version of the task's reference (its inputs grown), as archives of several KernelBench releases hold
        out["PyTorch_Code_Module"] = row["PyTorch_Code_Module"] + f"\nbatch_size = batch_size * {variant + 1}\n"
    return out


def generate(sample: list[dict], rows: int, seed: int = 0, reference_variants: int = 1):
    rng = random.Random(seed)
    for index in range(rows):
        yield vary_row(sample[index % len(sample)], index, rng, reference_variants)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=30000)
    parser.add_argument("--sample", type=Path, default=DEFAULT_SAMPLE)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--reference-variants", type=int, default=1,
                        help="versions of each task's reference among the rows (1: the sample's only)")
    args = parser.parse_args(argv)
    sample = load_sample(args.sample)
    with args.out.open("w") as handle:
        for row in generate(sample, args.rows, args.seed, args.reference_variants):
            handle.write(json.dumps(row) + "\n")
    print(f"wrote {args.rows} rows to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
