#!/usr/bin/env bash
# The demo archive re-measured with today's harness on an H200 host, in one call (issue #16;
# docs/demo_archive.md). The archive's claims stay those of the shipped build: the naive
# evaluator's documents (tests/fixtures/demo_archive/demo_harness_results.json) seed the work dir,
# since they are what a careless publisher would have measured, not the harness's figures. Measured
# anew: the harness's untimed check and timed run of every entry, ncu and torch.profiler profiles,
# clang-tidy.
#
#   OUT=dir bash scripts/gpu_demo_rebuild.sh [LIMIT_S]
#
# Needs .device/clang_tidy.tar.xz (`bash scripts/gpu_worker_throughput_h200.sh pack`), carried.
# Every extension is built first with the whole host (`judge --build-only`); then the checks and
# timed runs, and beside them the profiles, share the GPU through one device-lock folder (each
# timing loop and profiled window alone on it), timing on CPUs 0-1, everything else on the rest.
# Writes to $OUT: demo_archive.jsonl, demo_harness_results.json and build_log.json (the files to
# commit) and the logs.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:?set OUT to the results directory}
limit=${1:-540}
work=/tmp/kb_demo_rebuild
builds=/tmp/kb_demo_builds
site=/tmp/kb_demo_site
rm -rf "$work" "$builds" "$site" && mkdir -p "$work/state" "$site" "$OUT" || exit 1
left() { echo $(( limit - SECONDS )); }
tar xJf .device/clang_tidy.tar.xz -C "$site" || exit 1
export PATH=$site/clang_tidy/data/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader > "$OUT/versions.txt"
python3 -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)' >> "$OUT/versions.txt"
nproc >> "$OUT/versions.txt"

# 1. The claims of the shipped build.
python3 - "$work/state" <<'EOF' || exit 1
import json, os, sys
entries = json.load(open("tests/fixtures/demo_archive/demo_harness_results.json"))["entries"]
for name, entry in entries.items():
    os.makedirs(os.path.join(sys.argv[1], name), exist_ok=True)
    json.dump(entry["naive"], open(os.path.join(sys.argv[1], name, "naive.json"), "w"))
print("seeded the naive evaluator's documents of", len(entries), "entries")
EOF

# 2. Every extension at once, with the whole host.
python3 -c '
import json
m = json.load(open("evaluator/demo_archive/manifest.json"))
for e in m["entries"]:
    print(m["tasks"][e["task"]]["module"], e["file"], e["kind"])
' > "$work/builds.txt"
xargs -P "$(nproc)" -L 1 sh -c 'python3 -m verifier.core.judge --reference "$0" --candidate "$1" --kind "$2" --device cuda \
    --build-dir '"$builds"' --build-only > /dev/null 2>&1' < "$work/builds.txt"
echo "prebuilt at $SECONDS s"

# 3. Checks and timed runs, and the profiles beside them, one device lock.
export VERIFIER_DEVICE_LOCK_DIR=$work/locks VERIFIER_TIMING_CPUS=0,1
pin="taskset -c 2-$(( $(nproc) - 1 ))"
demo() {  # NAME PHASES DEADLINE
    $pin python3 -m evaluator.demo_archive.build --device cuda --out "$work/out_$1" --work-dir "$work/state" \
        --build-dir "$builds" --jobs 14 --gpu-jobs 4 --time-budget 2 --no-compile --phases "$2" --deadline "$3" \
        > "$OUT/demo_$1.log" 2>&1
}
deadline=$(( $(left) - 150 ))
demo harness check,timed "$deadline" &
demo profiles profiles "$deadline" &
wait
echo "phases done at $SECONDS s"
# 4. Every entry together: demo_archive.jsonl once nothing is missing.
python3 -m evaluator.demo_archive.build --device cuda --out "$work/demo" --work-dir "$work/state" \
    --build-dir "$builds" --jobs 14 --time-budget 2 --no-compile --deadline 1 > "$OUT/demo_all.log" 2>&1
echo "assembled: exit $? at $SECONDS s"
tail -n 3 "$OUT/demo_all.log"
# One build log for the whole build, the phase builders' runs first: the signed records'
# verified_at is the first run's start (evaluator/h200_results/build_records.py).
python3 - "$work" <<'EOF' || echo "build logs not merged"
import json, sys
work = sys.argv[1]
logs = [json.load(open("%s/%s/build_log.json" % (work, out))) for out in ("out_harness", "out_profiles", "demo")]
merged = logs[-1]
merged["runs"] = sorted((run for log in logs for run in log["runs"]), key=lambda run: run["started"])
json.dump(merged, open("%s/demo/build_log.json" % work, "w"), indent=1)
EOF
cp "$work"/demo/*.json* "$OUT"/ 2>/dev/null
grep -h -E "^\[" "$OUT"/demo_harness.log "$OUT"/demo_profiles.log | sort -n -k1.2 | tail -n 50
