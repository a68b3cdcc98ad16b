# Sourced by the one-call GPU scripts (gpu_worker_throughput.sh, gpu_campaign_and_timing.sh)
# after they set OUT and work: prepares the host once, then gives them
#   pin CPUS COMMAND...  run COMMAND on those cores (taskset), so runs side by side do not share cores;
#   pack                 put the data directory (database, Huey queue) and everything under
#                        $work into $OUT/results.tgz: after every step, so a call cut short
#                        still brings back what it finished.
mkdir -p "$work" "$OUT"
cores=$(nproc)
start=$(date +%s)
bash scripts/gpu_worker_check.sh prepare || exit 1  # once, before runs start side by side
pin() { local cpus=$1; shift; if command -v taskset >/dev/null; then taskset -c "$cpus" "$@"; else "$@"; fi; }
pack() { bash scripts/gpu_worker_check.sh pack "$work"; tar czf "$OUT/results.tgz" -C "$work" .; }
