#!/usr/bin/env bash
# On a 2-GPU host, in one call: build the demo archive (evaluator/demo_archive, half of its
# entries per GPU) and re-run the cheat-suite entries that concern the harness's stream-order
# probe and the timing-only cheats. Everything comes back packed in $OUT/results.tgz.
#
#   OUT=dir bash scripts/gpu_demo_and_cheats.sh [SECONDS]
#
# SECONDS (default 540) is the budget of the whole run: the builders stop starting new work
# before it, and keep what they finished (they resume from their work dirs when re-run).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:?set OUT to the results directory}
budget=${1:-540}
work=/tmp/gpu_demo_and_cheats
mkdir -p "$work" "$OUT"
start=$(date +%s)
export PYTHONUNBUFFERED=1
# clang-tidy for the archive's Clang_Tidy column, from the PyPI wheel when the host has none.
if ls .whl/clang_tidy-*.whl >/dev/null 2>&1 && ! command -v clang-tidy >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/clang_tidy_site .whl/clang_tidy-*.whl &&
        export PATH=/tmp/clang_tidy_site/clang_tidy/data/bin:$PATH
fi
half() {
    python3 -c "import json, sys; names = [e['name'] for e in json.load(open('evaluator/demo_archive/manifest.json'))['entries']]; print(','.join(names[int(sys.argv[1])::2]))" "$1"
}
demo() {  # demo GPU HALF DEADLINE
    CUDA_VISIBLE_DEVICES=$1 python3 -m evaluator.demo_archive.build --device cuda --out "$work/demo_$2" \
        --work-dir "$work/work_$2" --jobs 8 --build-dir /tmp/kb_demo_builds --time-budget 2 --no-compile \
        --only "$(half "$2")" --deadline "$3" > "$work/demo_$2.log" 2>&1
}
CHEATS=side_stream_relu_cu,side_stream_matmul_cu,deferred_write_cu,warm_cache_cu,honest_model_new_relu_cu,honest_relu_cu

nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | tee "$work/gpus.txt"
demo 1 1 $((budget - 60)) &
(
    CUDA_VISIBLE_DEVICES=0 timeout $((budget / 2)) python3 -m verifier.gpu_campaign --device cuda \
        --out "$work/cheats" --jobs 6 --timed-jobs 1 --build-dir /tmp/kb_cheat_builds --time-budget 2 \
        --timeout 240 --no-compile --only "$CHEATS" > "$work/cheats.log" 2>&1
    demo 0 0 $((budget - 60 - ($(date +%s) - start)))
) &
wait
tar czf "$OUT/results.tgz" -C "$work" --exclude='work_*' .
echo "done in $(( $(date +%s) - start )) s"
tail -5 "$work"/demo_*.log "$work/cheats.log"
