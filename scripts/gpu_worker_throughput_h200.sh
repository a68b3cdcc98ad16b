#!/usr/bin/env bash
# Issue #16's worker throughput on ONE GPU of a bare 16-core host, in one device call of at most
# 600 s (docs/worker_runs.md): the site's worker (`manage.py run_huey`, one
# consumer, THREADS threads) on the 42 kernels of the earlier 185/h runs (ids 13-26, 47-60, 81-94
# of a fresh import of the shared sample, interleaved by task), cold build cache, every run
# building, verifying, ncu-profiling and linting, stopped gracefully at the deadline.
#
#   bash scripts/gpu_worker_throughput_h200.sh pack        # here: makes what the call carries
#   OUT=dir bash scripts/gpu_worker_throughput_h200.sh run [THREADS]   # on the GPU host
#   OUT=dir bash scripts/gpu_worker_throughput_h200.sh check           # anywhere: setup only, no GPU
#
# `pack` writes .device/ (git-ignored: name `.device` in the call's carry): site.tar.xz (the
# worker's Python packages missing from the GPU image, unpacked from their pinned wheels without
# their .po translation sources: 7 MB against the wheels' 15), data.tgz (a migrated SQLite
# archive of the shared sample made with import_archive) and clang_tidy.tar.xz (the clang-tidy
# binary and clang's headers from the pinned PyPI wheel). A call carries at most 64 MiB with the
# tracked tree, so `pack` fails when they would not fit.
#
# PREBUILD=N builds every queued kernel first, N at once (a warm build cache for the worker);
# PREBUILD_S=S starts no build after S s from the script's start (the rest build in the worker).
#   OUT=dir PREBUILD=16 bash scripts/gpu_worker_throughput_h200.sh prebuild   # only that, no worker
# KEEP=1 reuses what an earlier call on the same, still warm, machine left in /tmp (the site, the
# archive with its finished runs and Huey's queue, the build cache), so a campaign spans calls:
# `prebuild` in one call, then `run` with KEEP=1, then KEEP=1 KERNELS=remaining (the kernels with
# no finished run). Without KEEP each call starts from the packed archive and a cold cache.
# `run` writes to $OUT: summary.txt (kernels/hour, per-phase medians, one line per kernel),
# cpu_by_process.txt (the CPU by kind of process, from every process's CPU every 2 s),
# worker.json (bench_worker's summary with every run's phases), run.log (this script's output),
# results.tgz (the database and Huey's queue, for a fixture) and logs.tgz (gpu_samples.csv and
# loadavg.txt: device memory and utilisation, load average, every 5 s; ps.txt.gz; the consumer's
# and bench_worker's logs). TOTAL_S (default 570) is the whole
# call's budget: the worker's deadline is what is left after the setup, minus STOP_WAIT_S (default
# 75) for the jobs running at the deadline to finish, minus 20 s for writing the results.
set -uo pipefail
cd "$(dirname "$0")/.."
mode=${1:?pack, run or check}
KERNELS=${KERNELS:-13,47,81,14,48,82,15,49,83,16,50,84,17,51,85,18,52,86,19,53,87,20,54,88,21,55,89,22,56,90,23,57,91,24,58,92,25,59,93,26,60,94}
# The names the earlier runs recorded for ids 13, 47 and 81 (tests/fixtures/h200/worker_session3.json).
EXPECTED_NAMES=${EXPECTED_NAMES:-13:unrolled_loop_optimization_base}
SAMPLE=${SAMPLE:-../shared/data/sakana_archive_subset.jsonl}
WHEELS="Django==5.2.19 asgiref==3.13.0 sqlparse==0.6.1 djangorestframework==3.18.3 huey==3.5.4 dj-database-url==3.1.2 django-axes==8.3.1 whitenoise==6.12.0 cryptography==50.0.2 cffi==2.1.1 pycparser==3.12"
CLANG_TIDY=clang-tidy==23.1.4
start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }

if [ "$mode" = pack ]; then
    py=${PYTHON:-.venv/bin/python}
    rm -rf .whl .device/data .device/data.tgz .device/site.tar.xz && mkdir -p .device/data
    platform="--only-binary=:all: --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64"
    tmp=$(mktemp -d)
    # A wheel of these is its files (none has a .data folder), so unpacking is installing it.
    # shellcheck disable=SC2086
    $py -m pip download -q --no-deps $platform -d "$tmp/wheels" $WHEELS || exit 1
    for wheel in "$tmp"/wheels/*.whl; do unzip -q -o "$wheel" -d "$tmp/site" || exit 1; done
    if find "$tmp/site" -maxdepth 1 -name "*.data" | grep -q .; then echo "a wheel has a .data folder: unpacking is not installing it"; exit 1; fi
    find "$tmp/site" -name "*.po" -delete
    tar -cf - -C "$tmp/site" . | xz -6 -T0 > .device/site.tar.xz && rm -rf "$tmp" || exit 1
    if [ ! -f .device/clang_tidy.tar.xz ]; then
        tmp=$(mktemp -d)
        # shellcheck disable=SC2086
        $py -m pip download -q --no-deps $platform -d "$tmp" $CLANG_TIDY || exit 1
        (cd "$tmp" && unzip -q clang_tidy-*.whl 'clang_tidy/data/bin/clang-tidy' 'clang_tidy/data/lib/*' &&
            tar -cf - clang_tidy | xz -6 -T0 > clang_tidy.tar.xz) || exit 1
        mv "$tmp/clang_tidy.tar.xz" .device/ && rm -rf "$tmp"
    fi
    ARCHIVE_DATA_DIR=$PWD/.device/data DJANGO_SETTINGS_MODULE=archive_site.settings_gpu_worker \
        $py manage.py migrate --noinput -v0 || exit 1
    ARCHIVE_DATA_DIR=$PWD/.device/data DJANGO_SETTINGS_MODULE=archive_site.settings_gpu_worker \
        $py manage.py import_archive "$SAMPLE" --no-progress || exit 1
    # EXTRA_ARCHIVES: more archives in the same database (a campaign's, e.g. a CUDA-L1 dump), their
    # rows without a kernel skipped and counted by import_archive.
    for extra in ${EXTRA_ARCHIVES:-}; do
        ARCHIVE_DATA_DIR=$PWD/.device/data DJANGO_SETTINGS_MODULE=archive_site.settings_gpu_worker \
            $py manage.py import_archive "$extra" --rows-without-kernel skip --no-progress || exit 1
    done
    tar czf .device/data.tgz -C .device data && rm -rf .device/data
    carried=$(du -cb .device | tail -1 | cut -f1)
    tracked=$(git ls-files -z | du -cb --files0-from=- | tail -1 | cut -f1)
    echo "a call carries $(( (carried + tracked) / 1048576 )) MiB: .device $(( carried / 1048576 )), the tracked tree $(( tracked / 1048576 )); at most 64"
    [ $(( carried + tracked )) -lt $(( 64 * 1048576 )) ] || { echo "too much for one call"; exit 1; }
    exit 0
fi

OUT=${OUT:?set OUT to the results directory}
mkdir -p "$OUT"
site=/tmp/kb_site
work=/tmp/kb_h200
exec > >(tee -a "$OUT/run.log") 2>&1
if [ "${KEEP:-}" = 1 ] && [ -d "$work/data" ] && [ -d "$site/clang_tidy" ]; then
    echo "KEEP=1: reusing $site and $work from an earlier call ($(ls "$work/builds" 2>/dev/null | wc -l) build cache entries)"
else
    [ "${KEEP:-}" = 1 ] && echo "KEEP=1 but nothing to keep here (a fresh machine): starting cold"
    rm -rf "$site" "$work" && mkdir -p "$site" "$work" || exit 1
    tar xJf .device/site.tar.xz -C "$site" || exit 1
    tar xJf .device/clang_tidy.tar.xz -C "$site" || exit 1
    tar xzf .device/data.tgz -C "$work" || exit 1
fi
# The clang-tidy binary itself on PATH (verifier/clang_tidy_run.py finds it there).
export PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH} PATH=$site/clang_tidy/data/bin:$PATH
export DJANGO_SETTINGS_MODULE=archive_site.settings_gpu_worker
export ARCHIVE_DATA_DIR=$work/data
export ARCHIVE_BUILD_CACHE_DIR=$work/builds  # cold: made fresh above, unless KEEP=1
export ARCHIVE_VERIFY_DEVICE=${ARCHIVE_VERIFY_DEVICE:-cuda}
# Eager baseline only, as in the 185/h runs: the torch.compile baseline added 6-12 s to a judge
# on the idle H200 (compiled in the judge, harness 2.4.1; a probe removed after db83700).
# Unset: the flags of every earlier throughput figure; set empty (ARCHIVE_VERIFY_JUDGE_ARGS=) for the judge's defaults.
export ARCHIVE_VERIFY_JUDGE_ARGS=${ARCHIVE_VERIFY_JUDGE_ARGS---no-compile --time-budget 2}
export ARCHIVE_VERIFY_TIMEOUT_S=${ARCHIVE_VERIFY_TIMEOUT_S:-600}
# The judge pins itself to the first reserved CPU and its runner to the second while timing
# (verifier/core/timing_report.py): two of the 16, the other 14 for builds, judges, ncu and lints.
export ARCHIVE_VERIFY_TIMING_CPUS=${ARCHIVE_VERIFY_TIMING_CPUS:-0,1}
export ARCHIVE_VERIFY_LINT_WORKERS=${ARCHIVE_VERIFY_LINT_WORKERS:-4}
export PYTHONUNBUFFERED=1
threads=${2:-24}
# The packed database may predate this tree's migrations (a campaign spans sessions).
python3 manage.py migrate --noinput -v0 || exit 1
echo "setup done at $(elapsed) s; $(nproc) CPUs; threads $threads; timing CPUs $ARCHIVE_VERIFY_TIMING_CPUS"
command -v clang-tidy && clang-tidy --version | head -2
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
python3 - "$KERNELS" "$EXPECTED_NAMES" <<'EOF' || exit 1
import os, sys
import django
sys.path.insert(0, os.getcwd())
django.setup()
from kernels.models import Kernel
import torch
from verifier.clang_tidy_run import clang_tidy_binary
ids = [int(i) for i in sys.argv[1].split(",")] if sys.argv[1] not in ("all", "remaining") else \
    list(Kernel.objects.values_list("id", flat=True))
names = dict(Kernel.objects.filter(id__in=ids).values_list("id", "name"))
missing = sorted(set(ids) - set(names))
expected = dict(pair.split(":", 1) for pair in sys.argv[2].split(",") if pair)
wrong = {i: (n, names.get(int(i))) for i, n in expected.items() if names.get(int(i)) != n}
print("torch", torch.__version__, "cuda", torch.version.cuda, "gpus", torch.cuda.device_count())
print("django", django.__version__, "clang-tidy", clang_tidy_binary(), "kernels", len(names), "of", len(ids))
if missing or wrong or not clang_tidy_binary():
    sys.exit("not the expected archive or toolchain: missing %s, wrong names %s" % (missing, wrong))
EOF
[ "$mode" = check ] && { echo "check done at $(elapsed) s"; exit 0; }
case "$mode" in run|prebuild) ;; *) echo "unknown mode $mode" >&2; exit 2 ;; esac

if [ -n "${PREBUILD:-}" ] && [[ "$KERNELS" =~ ^[0-9,]+$ ]]; then
    # Warm build cache: every queued kernel's extension built first, PREBUILD at once with the
    # whole host, by the worker's own build step (its bundle, `judge --build-only`, the same cache),
    # so the worker's figures are verification, ncu and lint without the builds.
    python3 - "$KERNELS" "$PREBUILD" "$(( start + ${PREBUILD_S:-100000} ))" <<'PYEOF' || exit 1
import concurrent.futures as cf, json, os, sys, tempfile, time
from pathlib import Path
import django
sys.path.insert(0, os.getcwd())
django.setup()
from django.conf import settings
from django.db import close_old_connections
from evaluator.kernel_bundles import bundle_for_kernel
from kernels.models import Kernel
from verifier.bundle_run import _harness_env, unpack_bundle
from verifier.bundle_script import harness_command
from verifier.core.sandbox import run_harness_isolated
ids = [int(i) for i in sys.argv[1].split(",")]
bundles = {k.id: bundle_for_kernel(k) for k in Kernel.objects.filter(id__in=ids)}
close_old_connections()
def build(kernel_id):
    if time.time() > int(sys.argv[3]):  # PREBUILD_S is up: the worker builds the rest
        return kernel_id, "not prebuilt", 0.0
    run_dir = Path(tempfile.mkdtemp(prefix="prebuild_"))
    unpack_bundle(bundles[kernel_id], run_dir)
    claims = json.loads((run_dir / "claims.json").read_text())
    command = harness_command(run_dir, claims, "cuda", None, run_dir / "result.json", []) + ["--build-only"]
    started = time.monotonic()
    doc = run_harness_isolated(command, cwd=run_dir, timeout_s=900, memory_limit_bytes=None,
                               env=_harness_env(settings.BUILD_CACHE_DIR))
    return kernel_id, doc.get("verdict"), round(time.monotonic() - started, 1)
started = time.monotonic()
with cf.ThreadPoolExecutor(int(sys.argv[2])) as pool:
    done = list(pool.map(build, ids))
print("prebuilt %d kernels in %.0f s: %s" % (len(done), time.monotonic() - started,
      ", ".join("%d %s %.0fs" % row for row in done)))
PYEOF
    echo "prebuild done at $(elapsed) s"
fi
[ "$mode" = prebuild ] && { echo "done at $(elapsed) s"; exit 0; }
TOTAL_S=${TOTAL_S:-570}
STOP_WAIT_S=${STOP_WAIT_S:-75}
deadline=$(( TOTAL_S - $(elapsed) - STOP_WAIT_S - 20 ))
echo "worker: $threads threads, deadline $deadline s, then up to $STOP_WAIT_S s for running jobs"
# Everything starts off the reserved CPUs (the judges pin their timing onto them themselves);
# WORKER_CPUS (e.g. 2-29) keeps some for other work on the host.
last=$(( $(nproc) - 1 ))
pin=""
command -v taskset >/dev/null && [ "$last" -gt 2 ] && pin="taskset -c ${WORKER_CPUS:-2-$last}"
# What the host and the GPU looked like meanwhile: device memory and utilisation, load average.
samplers=""
if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=timestamp,index,memory.used,memory.total,utilization.gpu,clocks.sm --format=csv -l 5 \
        > "$work/gpu_samples.csv" 2>/dev/null &
    samplers="$!"
fi
(while sleep 5; do echo "$(date +%s) $(cat /proc/loadavg)"; done) > "$work/loadavg.txt" &
samplers="$samplers $!"
# Every process's cumulative CPU every 2 s: where the host's CPU goes, by kind of process
# (scripts/worker_cpu_by_process.py ps.txt.gz --kernels N).
(while sleep 2; do echo "@ $(date +%s)"; ps -ww -eo pid=,ppid=,times=,comm=,args= | cut -c1-1000; done) > "$work/ps.txt" &
samplers="$samplers $!"
$pin python3 bench/bench_worker.py worker --kernels "$KERNELS" --gpus 0 --threads "$threads" \
    --deadline-s "$deadline" --stop-wait-s "$STOP_WAIT_S" --out "$OUT/worker.json" > "$work/bench.log" 2>&1
status=$?
# shellcheck disable=SC2086
kill $samplers 2>/dev/null
tail -c 4000 "$work/bench.log"
tail -c 3000000 "$ARCHIVE_DATA_DIR"/consumer_gpu*.log > "$work/consumer.log" 2>/dev/null
python3 scripts/worker_throughput_summary.py "$OUT/worker.json" > "$OUT/summary.txt" && cat "$OUT/summary.txt"
gzip -c "$work/ps.txt" > "$work/ps.txt.gz"
python3 scripts/worker_cpu_by_process.py "$work/ps.txt.gz" \
    --kernels "$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["kernels"] or 1)' "$OUT/worker.json")" \
    | tee "$OUT/cpu_by_process.txt"
for db in "$ARCHIVE_DATA_DIR"/archive.sqlite3 "$ARCHIVE_DATA_DIR"/huey.sqlite3; do  # fold the WAL in
    [ -f "$db" ] && python3 -c 'import sqlite3, sys; sqlite3.connect(sys.argv[1]).execute("PRAGMA wal_checkpoint(TRUNCATE)")' "$db"
done
tar czf "$OUT/results.tgz" -C "$work" --exclude='*.log' data
# The samples and logs in one file: a call brings back only so many files (8 on 2026-12-01, when
# summary.txt and worker.json were the ones left out).
logs=""
for f in gpu_samples.csv loadavg.txt ps.txt.gz consumer.log bench.log; do [ -f "$work/$f" ] && logs="$logs $f"; done
# shellcheck disable=SC2086
tar czf "$OUT/logs.tgz" -C "$work" $logs
echo "done at $(elapsed) s"
exit $status
