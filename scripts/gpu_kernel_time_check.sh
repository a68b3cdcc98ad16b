#!/usr/bin/env bash
# Harness 2.3.0's kernel-time clock on a GPU host, in one call: the sample's level-3 task-1
# kernel (its call waits for the device inside itself, so it ranks on kernel time) in 5 judge
# processes, then the cheat suite's timed entries and the entries about patching the runner
# (the new honest waiting kernel and the kernel-time forgery among them).
#
#   OUT=dir SAMPLE=rows.jsonl bash scripts/gpu_kernel_time_check.sh [LIMIT_S]
#
# Writes $OUT/l3/ (bench_timing_repro's summary and documents) and $OUT/cheats/ (the judge's
# documents and summary.md), each part cut at its share of LIMIT_S (default 560).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:?set OUT to the results directory}
SAMPLE=${SAMPLE:?set SAMPLE to the shared sample rows}
limit=${1:-560}
ENTRIES=honest_relu_cu,honest_softmax_cu,honest_matmul_cu,honest_linear_relu_cu,honest_model_new_relu_cu
ENTRIES=$ENTRIES,honest_waits_inside_cu,side_stream_matmul_cu,side_stream_relu_cu,warm_cache_cu
ENTRIES=$ENTRIES,kernel_time_forge_py,attack_timer_oneshot_py,attack_gc_scavenge_timing_py,attack_call_count_py
ENTRIES=$ENTRIES,attack_pointer_identity_py,attack_incremental_patch_py,attack_rhythm_py,attack_nan_timed_py
ENTRIES=$ENTRIES,timer_patch_py,attack_harness_code_swap_py,attack_state_surgery_py
mkdir -p "$OUT"
OUT="$OUT/l3" SAMPLE="$SAMPLE" RESERVE_CPUS=0,1 bash scripts/gpu_timing_check.sh 5 4 1.0 $((limit / 4)) \
    sample:L3:dense_nosync_fused_base
echo "level 3 done after $SECONDS s"
OUT="$OUT/cheats" ONLY=$ENTRIES bash scripts/gpu_cheat_subset.sh $((limit - SECONDS - 15))
echo "all done after $SECONDS s"
