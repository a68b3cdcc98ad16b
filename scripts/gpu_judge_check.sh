#!/usr/bin/env bash
# In one call on a GPU host: the whole cheat suite (honest kernels, cheats and attacks on the
# verification) through the judge, and beside it the cost of the judge/runner split against the
# in-process harness of 1.2.0 on the demo archive's kernels (bench/bench_judge_cost.py, honest
# speedups side by side). On one GPU both share it through the worker's device lock, so every
# timing loop has the GPU alone; on two, each takes one. Results and logs come back in $OUT.
#
#   OUT=dir [ONLY=name,name] bash scripts/gpu_judge_check.sh [SECONDS] [OLD_VERIFIER_DIR]
#
# Each side's timing loops get two reserved CPUs (VERIFIER_TIMING_CPUS: 0,1 and 2,3) and everything
# else runs on the other CPUs (taskset), as a worker host keeps its timing CPUs free.
# OLD_VERIFIER_DIR (default .oldharness) holds the old package: git archive f059ebd verifier | tar -x -C .oldharness
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:?set OUT to the results directory}
budget=${1:-540}
old=${2:-.oldharness}
work=/tmp/gpu_judge_check
mkdir -p "$work" "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD VERIFIER_DEVICE_LOCK_DIR=$work/locks
mkdir -p "$VERIFIER_DEVICE_LOCK_DIR"
second=$(( $(nvidia-smi -L | wc -l) > 1 ? 1 : 0 ))
others=4-$(( $(nproc) - 1 ))
only=${ONLY:+--only $ONLY}
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | tee "$OUT/gpus.txt"
uname -r > "$OUT/kernel.txt"
python3 -c "import torch; print(torch.__version__, torch.version.cuda)" >> "$OUT/kernel.txt"
(
    CUDA_VISIBLE_DEVICES=0 VERIFIER_TIMING_CPUS=0,1 timeout "$budget" taskset -c "$others" \
        python3 -m verifier.gpu_campaign --device cuda --out "$work/cheats" $only --jobs 8 --timed-jobs 1 --build-dir /tmp/kb_cheat_builds --time-budget 2 --timeout 300 --no-compile \
        > "$OUT/cheats.log" 2>&1
    cp "$work/cheats/"* "$OUT/" 2>/dev/null
) &
(
    CUDA_VISIBLE_DEVICES=$second VERIFIER_TIMING_CPUS=2,3 timeout "$budget" taskset -c "$others" \
        python3 bench/bench_judge_cost.py --old "$old" --device cuda \
        --build-dir /tmp/kb_cost_builds --time-budget 1 --jobs 8 --out "$OUT/judge_cost.json" \
        > "$OUT/judge_cost.log" 2>&1
) &
wait
ls -la "$OUT"
tail -n 25 "$OUT/cheats.log" "$OUT/judge_cost.log"
