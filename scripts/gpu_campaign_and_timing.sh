#!/usr/bin/env bash
# One call on a 2-GPU host that goes on with the full-sample worker campaign and measures the
# harness's timing quality (docs/worker.md and docs/h200_runs.md, "Measured on an H200"):
#   1. at once: timing quality on GPU 0 (cores 0-5; TQ_ROUNDS rounds of each harness variant in
#      its own process, plus KernelBench's way), and the worker on GPU 1 (the other cores) on
#      the kernels with no finished run, stopped gracefully after ALONGSIDE_S seconds;
#   2. then the worker on both GPUs (one queue, two consumers), stopped after BOTH_S seconds
#      (BOTH_S=0: no step 2).
# The database and Huey's queue (runs left queued stay queued) come back in $OUT/results.tgz,
# refreshed after each step; put its data.tgz in .device/ to go on in a later call.
#
#   OUT=dir bash scripts/gpu_campaign_and_timing.sh [ALONGSIDE_S] [BOTH_S] [TQ_ROUNDS] [THREADS]
# Needs what scripts/gpu_worker_check.sh needs.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:?set OUT to the results directory}
alongside_s=${1:-230}
both_s=${2:-150}
rounds=${3:-6}
threads=${4:-16}
work=/tmp/gpu_campaign_and_timing
source scripts/gpu_host_steps.sh

pin 0-5 env CUDA_VISIBLE_DEVICES=0 PYTHONUNBUFFERED=1 python3 -m verifier.gpu_campaign --out "$work/timing_quality" \
    --device cuda --timing-quality honest_matmul_cu --processes "$rounds" --time-budget 3 \
    --build-dir /tmp/kb_timing_builds \
    --variant "no_start_delay=--start-delay-us 0" --variant "start_delay=--start-delay-us 50" \
    > "$work/timing_quality.log" 2>&1 &
pin 6-$((cores - 1)) env OUT=$work WORKER_RUN_NAME=gpu1_alongside_timing WORKER_DEADLINE_S=$alongside_s \
    bash scripts/gpu_worker_check.sh worker remaining 1 "$threads" > "$work/worker_alongside.log" 2>&1
wait
echo "step 1 done at $(( $(date +%s) - start )) s"
pack

if [ "$both_s" = 0 ]; then tail -n 3 "$work"/*.log; exit 0; fi
OUT=$work WORKER_RUN_NAME=two_gpus WORKER_DEADLINE_S=$both_s \
    bash scripts/gpu_worker_check.sh worker remaining 0,1 "$threads" > "$work/worker_two_gpus.log" 2>&1
echo "step 2 done at $(( $(date +%s) - start )) s"
pack
tail -n 3 "$work"/*.log
