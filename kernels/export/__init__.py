"""Export of the archive as a dataset in the AI CUDA Engineer Archive's own schema, and back.

- schema.py: the published archive's 19 columns (names, order, Arrow types) and the
  columns this site adds.
- selectors.py: which kernels an export holds (the leaderboard's filters).
- rows.py: kernels -> archive rows, streamed in batches with a bounded number of queries.
- encoders.py: row batches -> bytes of Parquet, Arrow (the `datasets` on-disk format),
  CSV or JSONL, produced chunk by chunk so neither a download nor a file is built in memory.
- writers.py: one file per split, a `datasets` DatasetDict folder, the atomic swap.
- card.py: the dataset card (README.md with YAML front matter).
- services.py: the export as one call (used by the command), and the push to the hub.

Reading an export back is the ordinary import (kernels.services.archive_import_file):
the archive columns are exactly what it reads, and it ignores the extra columns.
"""
