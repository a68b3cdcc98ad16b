#!/usr/bin/env bash
# The site's GPU worker on a GPU host, in one call (docs/worker.md, "Measured on an H200").
#
#   OUT=dir bash scripts/gpu_worker_check.sh prepare
#   OUT=dir bash scripts/gpu_worker_check.sh sequential KERNEL_IDS
#   OUT=dir [WORKER_DEADLINE_S=s] bash scripts/gpu_worker_check.sh worker KERNEL_IDS|all|remaining GPUS [THREADS]
#   bash scripts/gpu_worker_check.sh pack DIR
#
# Expects, in the repository root: .device/data/archive.sqlite3 (a migrated database holding
# the archive, made on the web host with `manage.py import_archive`), or .device/data.tgz
# holding that data directory, and, where the host's Python lacks them, the worker's
# pure-Python packages and clang-tidy as wheels in .whl/. The host needs torch with CUDA,
# nvcc and ncu. Results (JSON summaries, consumer logs) go to $OUT; `pack DIR` puts the data
# directory (database and Huey's queue) into DIR/data.tgz.
set -uo pipefail
cd "$(dirname "$0")/.."
mode=${1:?prepare, sequential, worker or pack}
kernels=${2:-}
OUT=${OUT:-/tmp/gpu_worker_check}
mkdir -p "$OUT"

if ls .whl/*.whl >/dev/null 2>&1 && [ ! -d /tmp/site/django ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
fi
if [ -f .device/data.tgz ] && [ ! -f .device/data/archive.sqlite3 ]; then
    tar xzf .device/data.tgz -C .device || exit 1
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

versions() {
    nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
    python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "gpus", torch.cuda.device_count())'
    python3 -m django --version
}
checkpoint() {  # fold SQLite's write-ahead logs into the files before they are copied
    for db in "$ARCHIVE_DATA_DIR"/archive.sqlite3 "$ARCHIVE_DATA_DIR"/huey.sqlite3; do
        [ -f "$db" ] && python3 -c 'import sqlite3, sys; sqlite3.connect(sys.argv[1]).execute("PRAGMA wal_checkpoint(TRUNCATE)")' "$db"
    done
}
case "$mode" in
prepare)
    exit 0 ;;
pack)
    checkpoint
    tar czf "${kernels:?directory for data.tgz}/data.tgz" -C "$(dirname "$ARCHIVE_DATA_DIR")" \
        --exclude='worker' --exclude='*.log' "$(basename "$ARCHIVE_DATA_DIR")"
    exit $? ;;
sequential)
    versions
    python3 bench/bench_worker.py sequential --kernels "$kernels" --build-dir /tmp/kb_sequential_builds \
        --out "$OUT/sequential.json" ;;
worker)
    versions
    gpus=${3:-0}
    threads=${4:-12}
    python3 bench/bench_worker.py worker --kernels "$kernels" --gpus "$gpus" --threads "$threads" \
        ${WORKER_DEADLINE_S:+--deadline-s "$WORKER_DEADLINE_S"} --out "$OUT/worker_${WORKER_RUN_NAME:-run}.json"
    cat "$ARCHIVE_DATA_DIR"/consumer_gpu*.log > "$OUT/consumers_${WORKER_RUN_NAME:-run}.log" 2>/dev/null ;;
*)
    echo "unknown mode $mode" >&2; exit 2 ;;
esac
status=$?
exit $status
