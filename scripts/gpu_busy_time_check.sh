#!/usr/bin/env bash
# Harness 2.4.0's busy GPU time on the H200 in one call: the demo archive's five honest kernels in
# PROCESSES judge processes each (bench/bench_timing_repro.py, until TIMING_S), then the cheat
# suite's timed entries through the judge (scripts/gpu_cheat_subset.sh) with the time left.
#
#   OUT=dir [KERNELS=name,...] [SAMPLE=rows.jsonl] bash scripts/gpu_busy_time_check.sh [PROCESSES] [TIMING_S] [LIMIT_S]
#
# KERNELS: bench_timing_repro's names (default the demo's five honest kernels; the shared sample's
# task-1 kernels are sample:L1:..., sample:L2:..., sample:L3:..., read from SAMPLE).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:?set OUT to the results directory}
processes=${1:-5}
timing_s=${2:-260}
limit=${3:-520}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
demo=demo:relu_float4_grid_stride,demo:softmax_warp_shuffle_online,demo:matmul_shared_tiled_32
demo=$demo,demo:tiny_matmul_scaled_tiled,demo:linear_relu_shared_tiled
timeout "$timing_s" python3 bench/bench_timing_repro.py ${SAMPLE:+--sample "$SAMPLE"} --out "$OUT/repro" \
    --processes "$processes" --jobs 4 --reserve-cpus 0,1 --time-budget 1.0 --device cuda --only "${KERNELS:-$demo}" \
    > "$OUT/repro.log" 2>&1
echo "timing: exit $? after $SECONDS s"
timed=$(python3 -c 'import json; print(",".join(e["name"] for e in json.load(open("verifier/cheat_suite/manifest.json"))["entries"] if e.get("timing")))')
OUT="$OUT/cheats" ONLY=$timed bash scripts/gpu_cheat_subset.sh $((limit - SECONDS - 15)) | tail -n 25
echo "cheats done after $SECONDS s"
cp "$OUT"/repro/documents/demo_softmax_warp_shuffle_online_p0.json "$OUT/softmax_document_p0.json" 2>/dev/null
rm -rf "$OUT"/*/documents "$OUT"/*/locks "$OUT"/*/sources
cat "$OUT/repro/summary.md"
