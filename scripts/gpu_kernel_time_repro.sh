#!/usr/bin/env bash
# The kernel-time clock's second GPU check, in one call: the sample's level-3 task-1 kernel in 5
# judge processes (ranked on kernel time), the cheat-suite entries that wait inside their call
# (honest, forged, patching) with two honest controls, then the sample's level-1 task-1 kernel
# in 30 judge processes (issue #16: one kernel over 30 processes) until LIMIT_S.
#
#   OUT=dir SAMPLE=rows.jsonl bash scripts/gpu_kernel_time_repro.sh [LIMIT_S]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:?set OUT to the results directory}
SAMPLE=${SAMPLE:?set SAMPLE to the shared sample rows}
limit=${1:-480}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 KB_DEVICE_LOCK_DIR=/tmp/kb_locks
mkdir -p "$KB_DEVICE_LOCK_DIR"
repro() {  # name processes jobs seconds
    timeout "$4" python3 bench/bench_timing_repro.py --sample "$SAMPLE" --out "$OUT/$5" --processes "$2" \
        --jobs "$3" --reserve-cpus 0,1 --time-budget 1.0 --device cuda --only "$1" > "$OUT/$5.log" 2>&1
    echo "$5: exit $? after $SECONDS s"
}
repro sample:L3:dense_nosync_fused_base 5 4 150 l3
OUT="$OUT/cheats" ONLY=honest_waits_inside_cu,kernel_time_forge_py,attack_incremental_patch_py,honest_relu_cu,honest_model_new_relu_cu \
    bash scripts/gpu_cheat_subset.sh 200 | tail -n 8
echo "cheats done after $SECONDS s"
repro sample:L1:load_balanced_tile_allocation_base 30 4 $((limit - SECONDS - 10)) l1x30
# The documents stay on the host (too many files to bring back) but one: the summaries carry the figures.
cp "$OUT"/l3/documents/sample_L3_dense_nosync_fused_base_p0.json "$OUT/l3_document_p0.json" 2>/dev/null
rm -rf "$OUT"/*/documents "$OUT"/*/locks "$OUT"/*/sources
tail -n 6 "$OUT/l3/summary.md" "$OUT/l1x30/summary.md"
