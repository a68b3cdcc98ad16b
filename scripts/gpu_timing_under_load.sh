#!/usr/bin/env bash
# The judge's clock check (timing_unaccounted) on honest kernels whose timing CPUs are loaded, in
# one call on a GPU host: the cheat suite's honest timed CUDA entries through gpu_campaign, first
# on a quiet host, then with a busy loop on each of the two timing CPUs (KB_TIMING_CPUS=0,1), so
# the judge and its runner share their cores as on a loaded worker host. Harness 2.5.0 keeps
# timing a kernel whose median unaccounted time is over its allowance while the median's 95 %
# lower bound is not (docs/h200_runs.md, "More rounds before a timing_unaccounted failure"); this
# shows how often that happens and what the verdicts are (2.5.1 also stops adding rounds after 60 s).
#
#   OUT=dir [ONLY=name,name] bash scripts/gpu_timing_under_load.sh [SECONDS_PER_PASS]
#
# $OUT gets quiet.tgz and loaded.tgz (gpu_campaign's summary and documents) and their logs.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:?set OUT to the results directory}
budget=${1:-250}
ONLY=${ONLY:-honest_relu_cu,honest_softmax_cu,honest_matmul_cu,honest_linear_relu_cu,honest_model_new_relu_cu,honest_waits_inside_cu}
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD CUDA_VISIBLE_DEVICES=0 KB_TIMING_CPUS=0,1
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader > "$OUT/gpus.txt"
python3 -c "import torch; print(torch.__version__, torch.version.cuda)" >> "$OUT/gpus.txt"

run_pass() {  # NAME: the honest entries, timed one at a time, everything but timing off CPUs 0-1
    local work=/tmp/timing_under_load/$1
    mkdir -p "$work"
    timeout "$budget" taskset -c 2-$(( $(nproc) - 1 )) python3 -m verifier.gpu_campaign --device cuda --out "$work" \
        --only "$ONLY" --jobs 8 --timed-jobs 1 --build-dir /tmp/kb_cheat_builds --time-budget 2 --timeout 240 \
        --no-compile > "$OUT/$1.log" 2>&1
    echo "gpu_campaign exit $?" >> "$OUT/$1.log"
    tar czf "$OUT/$1.tgz" -C "$work" .
}

run_pass quiet
hogs=()
for cpu in 0 1; do
    taskset -c "$cpu" python3 -c "while True: pass" &
    hogs+=($!)
done
run_pass loaded
kill "${hogs[@]}" 2>/dev/null
tail -n 8 "$OUT/quiet.log" "$OUT/loaded.log"
