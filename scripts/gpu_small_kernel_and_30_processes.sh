#!/usr/bin/env bash
# Issue #16's two open timing checks in one call: why the microsecond demo kernels' speedups move
# between processes (scripts/gpu_small_kernel_probe.py, PROBE_PROCESSES fresh processes), then the
# sample's level-1 task-1 kernel in 30 judge processes (bench/bench_timing_repro.py) until LIMIT_S.
#
#   OUT=dir SAMPLE=rows.jsonl bash scripts/gpu_small_kernel_and_30_processes.sh [LIMIT_S]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:?set OUT to the results directory}
SAMPLE=${SAMPLE:?set SAMPLE to the shared sample rows}
limit=${1:-540}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 KB_DEVICE_LOCK_DIR=/tmp/kb_locks
mkdir -p "$KB_DEVICE_LOCK_DIR"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader > "$OUT/versions.txt"
# The level-1 kernel builds (and is judged once) beside the probe's builds (0 processes: builds
# only), before the probe times anything.
timeout 200 python3 scripts/gpu_small_kernel_probe.py "$OUT/probe_builds.json" 0 > "$OUT/probe_builds.log" 2>&1 &
probe_builds=$!
python3 bench/bench_timing_repro.py --sample "$SAMPLE" --out "$OUT/prebuild" --processes 1 --jobs 1 \
    --time-budget 0.2 --device cuda --only sample:L1:load_balanced_tile_allocation_base > "$OUT/prebuild.log" 2>&1 &
prebuild=$!
wait $probe_builds
echo "probe builds: exit $? after $SECONDS s"
wait $prebuild
echo "prebuild: exit $? after $SECONDS s"
timeout 240 python3 scripts/gpu_small_kernel_probe.py "$OUT/probe.json" "${PROBE_PROCESSES:-8}" > "$OUT/probe.log" 2>&1
echo "probe: exit $? after $SECONDS s"
timeout $((limit - SECONDS - 10)) python3 bench/bench_timing_repro.py --sample "$SAMPLE" --out "$OUT/l1x30" \
    --processes 30 --jobs "${JOBS:-5}" --reserve-cpus 0,1 --time-budget 1.0 --device cuda \
    --only sample:L1:load_balanced_tile_allocation_base > "$OUT/l1x30.log" 2>&1
echo "l1x30: exit $? after $SECONDS s"
rm -rf "$OUT"/*/documents "$OUT"/*/locks "$OUT"/*/sources
cat "$OUT/probe.log"
tail -n 8 "$OUT/l1x30/summary.md"
