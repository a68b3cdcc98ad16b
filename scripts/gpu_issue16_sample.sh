#!/usr/bin/env bash
# Issue #16 on a 2-GPU host in one device call, sharing the GPUs through one device-lock folder
# (every timing loop alone on its GPU; correctness runs overlap):
#   - rows of SAMPLE (ROWS, default all) re-verified with the judge as it stands
#     (scripts/gpu_sample_reverify.py, both GPUs, JOBS_PER_GPU judges per GPU once built);
#   - bench/bench_timing_repro.py: REPRO_PROCESSES processes of each of its 8 kernels on GPU 0
#     (REPRO_PROCESSES=0: none), from the start;
#   - bench/bench_timing_repro.py: LONG_PROCESSES processes of LONG_KERNEL on GPU 1, from the
#     start (LONG_AT=start) or once the sample is done, in the time left (LONG_AT=tail).
# GPU 0 times on reserved CPUs 0,1 and GPU 1 on 2,3; everything else runs on the other cores
# (taskset), as a worker host keeps its timing CPUs free.
# BUILD_JOBS builds at once (default 22; as many as ROWS builds everything first, with the whole
# host, before any judge runs), JOBS_PER_GPU judges per GPU (default 6), JUDGE_TIMEOUT the
# sandbox's watchdog per build or judge run (default 300 s; all builds at once need longer).
#
#   OUT=dir bash scripts/gpu_issue16_sample.sh SAMPLE.jsonl [LIMIT_S] [ROWS]
#
# Comes back in $OUT: versions.txt, sample_reverify.json/.md (every row's document), repro.tgz
# (the bench runs' summaries and documents) and logs.tgz. Everything is written as it finishes,
# so a call cut short keeps what was done.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:?set OUT to the results directory}
sample=${1:?the archive rows}
limit=${2:-560}
rows=${3:-}
long_kernel=${LONG_KERNEL:-sample:L2:modular_conv2d_relu_bias_base}
long_processes=${LONG_PROCESSES:-30}
repro_processes=${REPRO_PROCESSES:-5}
start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }
cores=$(nproc)
others=4-$((cores - 1))
builds=/tmp/kb_issue16_builds
logs=/tmp/kb_issue16_logs
mkdir -p "$OUT" "$logs"
export PYTHONUNBUFFERED=1 KB_DEVICE_LOCK_DIR=/tmp/kb_issue16_locks
mkdir -p "$KB_DEVICE_LOCK_DIR"
{
    nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
    python3 -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "gpus", torch.cuda.device_count())'
    echo "cores $cores"; uname -r
} > "$OUT/versions.txt" 2>&1
cat "$OUT/versions.txt"

pack() {
    rm -rf /tmp/kb_issue16_repro*/sources
    tar czf "$OUT/repro.tgz" -C /tmp kb_issue16_repro_long kb_issue16_repro 2>/dev/null
    tar czf "$OUT/logs.tgz" -C "$logs" .
}

long() {
    CUDA_VISIBLE_DEVICES=1 timeout "$1" taskset -c "$others" python3 bench/bench_timing_repro.py --sample "$sample" \
        --out /tmp/kb_issue16_repro_long --processes "$long_processes" --jobs "${LONG_JOBS:-4}" --only "$long_kernel" \
        --reserve-cpus 2,3 --time-budget 1.0 --build-dir "$builds" > "$logs/repro_long.log" 2>&1
    echo "repro long (GPU 1) done at $(elapsed) s"
}
if [ "$repro_processes" -gt 0 ]; then
    (CUDA_VISIBLE_DEVICES=0 timeout $((limit - 25)) taskset -c "$others" python3 bench/bench_timing_repro.py --sample "$sample" \
        --out /tmp/kb_issue16_repro --processes "$repro_processes" --jobs "${REPRO_JOBS:-4}" \
        --reserve-cpus 0,1 --time-budget 1.0 --build-dir "$builds" > "$logs/repro.log" 2>&1
     echo "repro (GPU 0) done at $(elapsed) s") &
fi
[ "${LONG_AT:-start}" = start ] && long $((limit - 25)) &
taskset -c "$others" python3 scripts/gpu_sample_reverify.py --sample "$sample" --out "$OUT" ${rows:+--rows "$rows"} \
    --gpus 0,1 --timing-cpus "0,1;2,3" --jobs-per-gpu "${JOBS_PER_GPU:-6}" --build-jobs "${BUILD_JOBS:-22}" \
    --time-budget 2 --timeout "${JUDGE_TIMEOUT:-300}" --deadline-s $((limit - 90)) --hard-deadline-s $((limit - 30)) --build-dir "$builds" \
    --work /tmp/kb_issue16_rows > "$logs/sample.log" 2>&1
echo "sample done at $(elapsed) s"
left=$((limit - 25 - $(elapsed)))
if [ "${LONG_AT:-start}" = tail ] && [ "$left" -gt 120 ]; then long "$left"; fi
wait
pack
tail -n 14 "$logs"/repro*.log
tail -n 4 "$OUT/sample_reverify.md"
ls -la "$OUT"
