#!/usr/bin/env bash
# Finish the demo archive on a 2-GPU host from a work dir seeded with the steps an earlier call
# finished, time the warm-cache cheat, then run the site's worker on a few archive kernels with
# the GPU shared by lock (correctness runs together, timing and ncu alone). One call.
#
#   OUT=dir bash scripts/gpu_demo_resume.sh SEEDED_WORK_DIR WORKER_KERNEL_IDS [SECONDS]
#
# Needs what scripts/gpu_worker_check.sh needs (.device/data, .whl). Results: $OUT/results.tgz.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:?set OUT to the results directory}
seed=${1:?seeded demo work dir}
kernels=${2:?kernel ids for the worker run}
budget=${3:-560}
work=/tmp/gpu_demo_resume
builds=/tmp/kb_demo_builds
mkdir -p "$work" "$OUT"
cp -r "$seed" "$work/state"
start=$(date +%s)
left() { echo $((budget - ($(date +%s) - start))); }
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
export PATH=/tmp/site/clang_tidy/data/bin:$PATH

# 1. Every extension at once (harness --build-only) so the one-at-a-time steps find them cached.
python3 -c '
import json
m = json.load(open("evaluator/demo_archive/manifest.json"))
for e in m["entries"]:
    print(m["tasks"][e["task"]]["module"], e["file"], e["kind"])
print("verifier/cheat_suite/tasks/relu.py verifier/cheat_suite/candidates/cheat_warm_cache.cu cuda_forward")
' > "$work/builds.txt"
xargs -P 16 -L 1 sh -c 'python3 -m verifier.judge --reference "$0" --candidate "$1" --kind "$2" --device cuda \
    --build-dir '"$builds"' --build-only > /dev/null 2>&1' < "$work/builds.txt"
echo "prebuilt at $(( $(date +%s) - start )) s"

# 2. The remaining demo steps, split over the two GPUs (same state dir, disjoint entries).
demo() {  # GPU NAME ENTRIES DEADLINE
    CUDA_VISIBLE_DEVICES=$1 python3 -m evaluator.demo_archive.build --device cuda --out "$work/out_$2" \
        --work-dir "$work/state" --jobs 8 --build-dir "$builds" --time-budget 2 --no-compile \
        --only "$3" --deadline "$4" > "$work/demo_$2.log" 2>&1
}
demo_deadline=$(( $(left) - 200 ))
demo 0 a relu_scalar_small_grid,relu_stale_memory,softmax_thread_per_row,softmax_warp_shuffle_online "$demo_deadline" &
demo 1 b matmul_shared_tiled_32,tiny_matmul_scaled_tiled,linear_relu_naive,matmul_library_call,tiny_matmul_scaled_zeros,linear_relu_shared_tiled "$demo_deadline" &
wait
# Every entry: writes demo_archive.jsonl once nothing is missing.
CUDA_VISIBLE_DEVICES=0 python3 -m evaluator.demo_archive.build --device cuda --out "$work/demo" \
    --work-dir "$work/state" --jobs 8 --build-dir "$builds" --time-budget 2 --no-compile --deadline 30 \
    > "$work/demo_all.log" 2>&1
echo "demo done at $(( $(date +%s) - start )) s"

# 3. The warm-cache cheat, timed (it is caught only when timed).
CUDA_VISIBLE_DEVICES=0 timeout 90 python3 -m verifier.gpu_campaign --device cuda --out "$work/cheats" --jobs 1 \
    --timed-jobs 1 --build-dir "$builds" --time-budget 2 --timeout 80 --no-compile --only warm_cache_cu \
    > "$work/cheats.log" 2>&1
echo "cheat done at $(( $(date +%s) - start )) s"

# 4. The site's worker on two GPUs, the GPU shared by lock.
OUT=$work WORKER_RUN_NAME=shared_lock_2gpu timeout $(( $(left) - 15 )) \
    bash scripts/gpu_worker_check.sh worker "$kernels" 0,1 8 > "$work/worker.log" 2>&1
echo "worker done at $(( $(date +%s) - start )) s"
tar czf "$OUT/results.tgz" -C "$work" --exclude=state .
tar czf "$OUT/state.tgz" -C "$work" state
