#!/usr/bin/env bash
# The site's GPU worker on a GPU host, in one call (docs/worker.md, "Measured on an H200").
#
#   OUT=dir bash scripts/gpu_worker_check.sh sequential KERNEL_IDS
#   OUT=dir bash scripts/gpu_worker_check.sh worker KERNEL_IDS GPUS [THREADS]
#
# Expects, in the repository root: .device/data/archive.sqlite3 (a migrated database holding
# the archive, made on the web host with `manage.py import_archive`) and, where the host's
# Python lacks them, the worker's pure-Python packages and clang-tidy as wheels in .whl/.
# The host needs torch with CUDA, nvcc and ncu. Results (JSON summaries, consumer logs and
# the database itself) go to $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
mode=${1:?sequential or worker}
kernels=${2:?kernel ids, comma-separated, or all}
OUT=${OUT:-/tmp/gpu_worker_check}
mkdir -p "$OUT"

if ls .whl/*.whl >/dev/null 2>&1 && [ ! -d /tmp/site/django ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
fi
# The clang-tidy binary itself (its /tmp/site/bin wrapper needs PYTHONPATH, which lint runs do not pass on).
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} PATH=/tmp/site/clang_tidy/data/bin:/tmp/site/bin:$PATH
# A verification-only host: no search app (FAISS, the embedding model) needed here.
export DJANGO_SETTINGS_MODULE=${DJANGO_SETTINGS_MODULE:-archive_site.settings_gpu_worker}
export ARCHIVE_DATA_DIR=${ARCHIVE_DATA_DIR:-$PWD/.device/data}
export ARCHIVE_VERIFY_DEVICE=cuda
# Eager baseline only: a torch.compile baseline costs ~15 s of compilation in every harness process.
export ARCHIVE_VERIFY_HARNESS_ARGS=${ARCHIVE_VERIFY_HARNESS_ARGS:---no-compile --time-budget 2}
export ARCHIVE_VERIFY_TIMEOUT_S=${ARCHIVE_VERIFY_TIMEOUT_S:-600}
export ARCHIVE_BUILD_CACHE_DIR=${ARCHIVE_BUILD_CACHE_DIR:-/tmp/kb_worker_builds}
export PYTHONUNBUFFERED=1

nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "gpus", torch.cuda.device_count())'
python3 -m django --version

case "$mode" in
sequential)
    python3 bench/bench_worker.py sequential --kernels "$kernels" --build-dir /tmp/kb_sequential_builds \
        --out "$OUT/sequential.json" ;;
worker)
    gpus=${3:-0}
    threads=${4:-12}
    python3 bench/bench_worker.py worker --kernels "$kernels" --gpus "$gpus" --threads "$threads" \
        --out "$OUT/worker_${WORKER_RUN_NAME:-run}.json"
    cat "$ARCHIVE_DATA_DIR"/consumer_gpu*.log > "$OUT/consumers_${WORKER_RUN_NAME:-run}.log" 2>/dev/null ;;
*)
    echo "unknown mode $mode" >&2; exit 2 ;;
esac
status=$?
if [ "$mode" = worker ]; then
    # Fold SQLite's write-ahead log into the file before copying it.
    python3 -c 'import sqlite3, sys; sqlite3.connect(sys.argv[1]).execute("PRAGMA wal_checkpoint(TRUNCATE)")' \
        "$ARCHIVE_DATA_DIR/archive.sqlite3"
    cp "$ARCHIVE_DATA_DIR/archive.sqlite3" "$OUT/archive_after_worker.sqlite3"
fi
exit $status
