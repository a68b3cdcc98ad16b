"""The dataset card: README.md with the YAML front matter the HuggingFace hub reads
(licence, splits and their files, features), then what the columns mean, how the numbers
were measured, what was filtered, and whom to cite."""
from dataclasses import dataclass, field
from datetime import datetime, timezone

import pyarrow as pa
import yaml

from .schema import ARCHIVE_COLUMNS, EXTRA_COLUMNS, features
from .writers import EXPORT_MARKER

# Where the hub finds each split's data, per export format.
_DATA_FILES = {
    "hf": "{split}/*.arrow",
    "parquet": "{split}.parquet",
    "jsonl": "{split}.jsonl",
    "csv": "{split}.csv",
}

CITATIONS = """\
@article{lange2025aicudaengineer,
  title   = {The AI CUDA Engineer: Agentic CUDA Kernel Discovery, Optimization and Composition},
  author  = {Lange, Robert Tjarko and Prasad, Aaditya and Sun, Qi and Faldor, Maxence and Tang, Yujin and Ha, David},
  journal = {arXiv preprint},
  year    = {2025},
  note    = {Dataset: SakanaAI/AI-CUDA-Engineer-Archive on the HuggingFace hub, CC-BY-4.0}
}

@article{ouyang2025kernelbench,
  title   = {KernelBench: Can LLMs Write Efficient GPU Kernels?},
  author  = {Ouyang, Anne and Guo, Simon and Arora, Simran and Zhang, Alex L. and Hu, William and R{\\'e}, Christopher and Mirhoseini, Azalia},
  journal = {arXiv preprint arXiv:2502.10517},
  year    = {2025}
}"""

MEASUREMENT = """\
**Claimed numbers** (`CUDA_Runtime`, `PyTorch_*_Runtime`, `CUDA_Speedup_*`, `Correct`,
`Max_Diff`) are the source archive's own, copied unchanged: runtimes in milliseconds,
speedup = baseline runtime / kernel runtime, 0.0 and a null runtime for incorrect kernels.
For the AI CUDA Engineer Archive they were measured by its authors (see its paper).
Readers of that archive have shown that some of its speedups are not real (kernels that
read the reference's leftover output from freed memory, skip work on tasks whose outputs
are near zero, or beat weak baselines), which is why this site re-verifies kernels.

**Re-measured numbers** (the `Verification_*` columns, when present) come from this
site's harness, run in a fresh subprocess per kernel on the GPU named in
`Verification_GPU`: the kernel and the reference get fresh random inputs on several
seeds (the allocator's free memory is poisoned before the kernel runs, inputs are
cloned and checked for mutation); the error is recorded as max abs error and relative
norm `||out - ref|| / ||ref||` against a measured tolerance. Timings are medians of
CUDA-event-timed calls with an L2 flush between iterations, a device-wide synchronize,
and the eager and `torch.compile` baselines timed in the same process, interleaved with
the kernel. Static and dynamic checks for known cheats raise flags with evidence
(`Verification_Flags`); `Verified` is true only when every trial passed and no blocking
flag was raised. Each verification records the sha256 of the bundle it ran
(`Verification_Bundle_SHA256`), the very bundle anyone can download from the kernel's page."""


@dataclass
class CardFacts:
    file_format: str
    split_rows: dict[str, int]
    archive_compatible: bool
    filters: list[str] = field(default_factory=list)
    source_archives: dict[str, int] = field(default_factory=dict)  # name -> kernels exported
    generated_at: datetime = field(default_factory=lambda: datetime.now(timezone.utc))


def dataset_card(facts: CardFacts) -> str:
    return f"---\n{yaml.safe_dump(_front_matter(facts), sort_keys=False, allow_unicode=True)}---\n{_body(facts)}"


def _front_matter(facts: CardFacts) -> dict:
    pattern = _DATA_FILES[facts.file_format]
    return {
        "license": "cc-by-4.0",
        "pretty_name": "Kernel archive export (AI CUDA Engineer Archive schema)",
        "tags": ["code", "cuda", "gpu-kernels", "kernelbench"],
        "configs": [{
            "config_name": "default",
            "data_files": [{"split": split, "path": pattern.format(split=split)} for split in facts.split_rows],
        }],
        "dataset_info": {
            # `datasets`' own YAML spelling of the features, so the hub shows the exact types.
            "features": features(archive_compatible=facts.archive_compatible)._to_yaml_list(),
            "splits": [{"name": split, "num_examples": rows} for split, rows in facts.split_rows.items()],
        },
    }


def _body(facts: CardFacts) -> str:
    total = sum(facts.split_rows.values())
    split_lines = "\n".join(f"| `{split}` | {rows:,} |" for split, rows in facts.split_rows.items())
    sources = "\n".join(f"- `{name}`: {count:,} kernels" for name, count in facts.source_archives.items()) or "- (none)"
    filters = "\n".join(f"- {words}" for words in facts.filters) or "- none: the whole archive"
    extras = "" if facts.archive_compatible else (
        "\n### Columns this site adds\n\nAfter the archive's columns (drop them with `--archive-compatible`):\n\n"
        + _column_table(EXTRA_COLUMNS)
    )
    loader = (
        'from datasets import load_from_disk\nds = load_from_disk("path/to/this/folder")'
        if facts.file_format == "hf"
        else f'from datasets import load_dataset\nds = load_dataset("{_loader_name(facts.file_format)}", '
        f'data_files={{split: f"{{split}}.{_extension(facts.file_format)}" for split in {list(facts.split_rows)!r}}})'
    )
    return f"""{EXPORT_MARKER}
# Kernel archive export

{total:,} machine-generated GPU kernels for KernelBench tasks, exported
{facts.generated_at:%Y-%m-%d %H:%M} UTC in the schema of the
[AI CUDA Engineer Archive](https://huggingface.co/datasets/SakanaAI/AI-CUDA-Engineer-Archive) by
Sakana AI: the same 19 columns, in the same order and with the same types, profiles as the
same Python-repr strings, and the splits `level_1`, `level_2`, `level_3`; code written for
that archive runs on this one unchanged.

| split | rows |
| --- | --- |
{split_lines}

```python
{loader}
df = ds["level_1"].to_pandas()
```

Profiles are Python literals, not JSON: read them with `ast.literal_eval`, never `eval`.

## Columns

{_column_table(ARCHIVE_COLUMNS)}{extras}

## How the numbers were measured

{MEASUREMENT}

## What this export holds

Filters:
{filters}

Source archives:
{sources}

## Licence and citation

The kernels, profiles and claimed numbers of the AI CUDA Engineer Archive are © Sakana AI,
released under CC-BY-4.0, and so is this export: credit the archive's authors wherever you
use or re-publish it. The tasks are KernelBench's (Stanford Scaling Intelligence Lab).

```bibtex
{CITATIONS}
```
"""


def _column_table(columns) -> str:
    lines = ["| column | type | meaning |", "| --- | --- | --- |"]
    # A pipe inside a cell (the relative-norm formula) would end the cell: escape it.
    lines += [f"| `{name}` | {_type_name(kind)} | {meaning.replace('|', chr(92) + '|')} |"
              for name, kind, meaning in columns]
    return "\n".join(lines) + "\n"


def _type_name(kind) -> str:
    """`datasets`' names (float64, not Arrow's double), as in the front matter."""
    if pa.types.is_list(kind):
        return f"list<{_type_name(kind.value_type)}>"
    return {"double": "float64"}.get(str(kind), str(kind))


def _loader_name(file_format: str) -> str:
    return {"parquet": "parquet", "jsonl": "json", "csv": "csv"}[file_format]


def _extension(file_format: str) -> str:
    return {"parquet": "parquet", "jsonl": "jsonl", "csv": "csv"}[file_format]
