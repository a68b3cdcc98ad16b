#!/usr/bin/env bash
# Worker throughput on a 2-GPU host, in one call (docs/worker.md, "Measured on an H200"):
#   1. at once: the plain sequential loop on SEQUENTIAL kernels (GPU 0, cores 0-3) and the site's
#      worker with a cold build cache on KERNELS (one consumer on GPU 1, cores 4-), each alone on
#      its GPU and its cores;
#   2. then the worker again on KERNELS with the build cache warm, two consumers (GPUs 0 and 1)
#      sharing one queue: how the runs split, and that none is run or recorded twice.
#
#   OUT=dir bash scripts/gpu_worker_throughput.sh KERNELS SEQUENTIAL
# Needs what scripts/gpu_worker_check.sh needs. Results: $OUT/results.tgz.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:?set OUT to the results directory}
kernels=${1:?kernel ids for the worker runs}
sequential=${2:?kernel ids for the sequential loop}
work=/tmp/gpu_worker_throughput
mkdir -p "$work"
cores=$(nproc)
start=$(date +%s)
if ls .whl/*.whl >/dev/null 2>&1; then  # once, before the two runs below start at the same time
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
fi
pin() { local cpus=$1; shift; if command -v taskset >/dev/null; then taskset -c "$cpus" "$@"; else "$@"; fi; }
pin 0-3 env CUDA_VISIBLE_DEVICES=0 OUT=$work bash scripts/gpu_worker_check.sh sequential "$sequential" \
    > "$work/sequential.log" 2>&1 &
pin 4-$((cores - 1)) env CUDA_VISIBLE_DEVICES=1 OUT=$work WORKER_RUN_NAME=cold_1gpu \
    bash scripts/gpu_worker_check.sh worker "$kernels" 1 $((cores - 4 > 16 ? 16 : cores - 4)) \
    > "$work/worker_cold.log" 2>&1
wait
echo "phase 1 done at $(( $(date +%s) - start )) s"
OUT=$work WORKER_RUN_NAME=warm_2gpu bash scripts/gpu_worker_check.sh worker "$kernels" 0,1 8 \
    > "$work/worker_warm.log" 2>&1
echo "phase 2 done at $(( $(date +%s) - start )) s"
tar czf "$OUT/results.tgz" -C "$work" .
tail -3 "$work"/*.log
