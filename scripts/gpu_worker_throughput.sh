#!/usr/bin/env bash
# Worker throughput on one GPU, against the plain sequential loop, in one call on a 2-GPU host
# (docs/worker.md, "Measured on an H200"):
#   1. at once: the plain sequential loop on SEQUENTIAL kernels (GPU 0, cores 0-3) and the site's
#      worker with a cold build cache on KERNELS (one consumer on GPU 1, the other cores), each
#      alone on its GPU and its cores; the worker stops gracefully after COLD_S seconds;
#   2. then the worker again on GPU 1 alone, on the kernels step 1 finished (their builds now
#      cached), stopped after WARM_S seconds.
# The database (and Huey's queue, with any runs left queued) comes back in $OUT/results.tgz,
# refreshed after each step, so `scripts/gpu_worker_campaign.sh` can go on from it.
#
#   OUT=dir bash scripts/gpu_worker_throughput.sh KERNELS SEQUENTIAL [COLD_S] [WARM_S]
# Needs what scripts/gpu_worker_check.sh needs.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:?set OUT to the results directory}
kernels=${1:?kernel ids for the worker runs}
sequential=${2:?kernel ids for the sequential loop}
cold_s=${3:-270}
warm_s=${4:-100}
work=/tmp/gpu_worker_throughput
source scripts/gpu_host_steps.sh

pin 0-3 env CUDA_VISIBLE_DEVICES=0 OUT=$work bash scripts/gpu_worker_check.sh sequential "$sequential" \
    > "$work/sequential.log" 2>&1 &
pin 4-$((cores - 1)) env OUT=$work WORKER_RUN_NAME=cold_1gpu WORKER_DEADLINE_S=$cold_s \
    bash scripts/gpu_worker_check.sh worker "$kernels" 1 16 > "$work/worker_cold.log" 2>&1
wait
echo "step 1 done at $(( $(date +%s) - start )) s"
pack

finished=$(python3 -c 'import json, sys; print(",".join(str(r["kernel_id"]) for r in json.load(open(sys.argv[1]))["runs"]))' \
    "$work/worker_cold_1gpu.json")
pin 4-$((cores - 1)) env OUT=$work WORKER_RUN_NAME=warm_1gpu WORKER_DEADLINE_S=$warm_s \
    bash scripts/gpu_worker_check.sh worker "$finished" 1 16 > "$work/worker_warm.log" 2>&1
echo "step 2 done at $(( $(date +%s) - start )) s"
pack
tail -3 "$work"/*.log
