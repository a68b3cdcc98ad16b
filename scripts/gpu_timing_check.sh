#!/usr/bin/env bash
# GPU time vs end to end on the H200, in one call (docs/h200_runs.md, "Harness 2.1.0 on the H200"):
# the same kernel in PROCESSES separate judge processes, for one honest kernel per demo-archive
# task and the sample's level 1/2/3 task-1 kernels (bench/bench_timing_repro.py), JOBS at a time
# sharing the GPU through the device lock (each timing loop alone on it).
#
#   OUT=dir [SAMPLE=rows.jsonl] bash scripts/gpu_timing_check.sh [PROCESSES] [JOBS] [TIME_BUDGET_S] [LIMIT_S] [ONLY]
#
# SAMPLE: the shared sample's rows (default ../shared/data/sakana_archive_subset.jsonl, carried
# with the call); without it only the demo kernels run.
#
# Writes $OUT/versions.txt, $OUT/repro/summary.{json,md}, $OUT/repro/documents/*.json (every
# result document, logs trimmed) and $OUT/repro.log. LIMIT_S stops the bench (the summary is
# rewritten after every process, so a run cut short keeps what finished).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:?set OUT to the results directory}
processes=${1:-5}
jobs=${2:-5}
budget=${3:-1.0}
limit=${4:-400}
only=${5:-}
mkdir -p "$OUT/repro"
{
    nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
    python3 -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)'
    nproc
} > "$OUT/versions.txt" 2>&1
# Smoke first (one process, one kernel): a broken GPU path stops here instead of spending the call.
timeout 150 python3 bench/bench_timing_repro.py ${SAMPLE:+--sample "$SAMPLE"} --out "$OUT/smoke" --processes 1 --jobs 1 --time-budget 0.5 \
    --device cuda --only demo:relu_float4_grid_stride > "$OUT/smoke.log" 2>&1
if ! grep -q '"verdict": "passed"' "$OUT"/smoke/documents/demo_relu_float4_grid_stride_p0.json 2>/dev/null; then
    echo "smoke failed after $SECONDS s"; tail -n 30 "$OUT/smoke.log"
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d.get("error"), d.get("flags"), d.get("log","")[-3000:])' \
        "$OUT"/smoke/documents/demo_relu_float4_grid_stride_p0.json 2>&1 | tail -c 6000
    exit 1
fi
echo "smoke passed after $SECONDS s" > "$OUT/repro.log"
timeout "$limit" python3 bench/bench_timing_repro.py ${SAMPLE:+--sample "$SAMPLE"} --out "$OUT/repro" --processes "$processes" --jobs "$jobs" \
    --reserve-cpus "${RESERVE_CPUS:-0,1}" \
    --time-budget "$budget" --device cuda ${only:+--only "$only"} >> "$OUT/repro.log" 2>&1
echo "bench exit $? after $SECONDS s" >> "$OUT/repro.log"
rm -rf "$OUT"/*/locks "$OUT"/*/sources
tail -n 15 "$OUT/repro.log"
