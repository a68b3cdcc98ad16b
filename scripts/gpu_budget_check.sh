#!/usr/bin/env bash
# Harness 2.7.0's verification budget on a GPU host, in one call: the whole cheat suite (every
# verdict as its manifest expects) and, beside it on the same GPU lock, CUDA-L1 rows at the
# judge's defaults (torch.compile baseline, 10 s timing, 90 s budget): ROWS of the dump in
# .device/cuda_l1/ (copy it there from ../shared/data/cuda_l1/ and carry .device/cuda_l1).
# ONLY=name,name runs those cheat-suite entries instead of all of them.
#
#   OUT=dir [DUMP=a100] [ROWS=3,5,7,32,50] [ONLY=...] bash scripts/gpu_budget_check.sh [SECONDS]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:?set OUT to the results directory}
budget=${1:-520}
dump=${DUMP:-a100}
work=/tmp/gpu_budget_check
mkdir -p "$work/locks" "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD VERIFIER_DEVICE_LOCK_DIR=$work/locks
others=4-$(( $(nproc) - 1 ))
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | tee "$OUT/gpus.txt"
python3 -c "import torch; print(torch.__version__, torch.version.cuda)" | tee -a "$OUT/gpus.txt"
(
    CUDA_VISIBLE_DEVICES=0 VERIFIER_TIMING_CPUS=0,1 timeout "$budget" taskset -c "$others" \
        python3 -m verifier.gpu_campaign --device cuda --out "$work/cheats" ${ONLY:+--only "$ONLY"} --jobs 6 --timed-jobs 1 \
        --build-dir /tmp/kb_cheat_builds --time-budget 2 --timeout 300 --no-compile > "$OUT/cheats.log" 2>&1
    echo "gpu_campaign exit $?" >> "$OUT/cheats.log"
    cp "$work/cheats/"* "$OUT/" 2>/dev/null
) &
(
    taskset -c "$others" python3 scripts/gpu_sample_reverify.py --sample ".device/cuda_l1/$dump.json" \
        --cuda-l1-gpu "$dump" --rows "${ROWS:-3,5,7,32,50}" --judge-args "" --gpus 0 --timing-cpus "2,3" \
        --jobs-per-gpu 5 --build-jobs 5 --max-jobs 2 --timeout 400 --deadline-s $(( budget - 110 )) \
        --hard-deadline-s $(( budget - 10 )) --build-dir /tmp/kb_cuda_l1_builds --out "$OUT/cuda_l1" \
        > "$OUT/cuda_l1.log" 2>&1
    echo "cuda_l1 exit $?" >> "$OUT/cuda_l1.log"
) &
wait
tail -n 25 "$OUT/cheats.log"
tail -n 15 "$OUT/cuda_l1.log"
