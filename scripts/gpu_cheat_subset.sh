#!/usr/bin/env bash
# A subset of the cheat suite through the judge on a GPU host, in one call, for a change that
# touches one part of the GPU path (the whole suite is scripts/gpu_judge_check.sh). Phase A runs
# the entries untimed, 8 at a time; phase B times the entries marked `timing`, one at a time.
#
#   OUT=dir ONLY=name,name bash scripts/gpu_cheat_subset.sh [SECONDS]
#
# ONLY takes entry names and groups (`:timed`, `:untimed`, `:honest`, `:attack`; `-name` leaves
# one out: gpu_campaign.select), e.g. ONLY=:timed for every entry the judge times.
#
# SECONDS (default 300) bounds the campaign. Results (every judge document, summary.md) come back
# in $OUT. scripts/README.md lists the other entry points.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:?set OUT to the results directory}
ONLY=${ONLY:?set ONLY to the manifest entries to run}
budget=${1:-300}
work=/tmp/gpu_cheat_subset
mkdir -p "$work" "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | tee "$OUT/gpus.txt"
python3 -c "import torch; print(torch.__version__, torch.version.cuda)" | tee -a "$OUT/gpus.txt"
timeout "$budget" python3 -m verifier.gpu_campaign --device cuda --out "$work" --only "$ONLY" --jobs 8 --timed-jobs 1 \
    --build-dir /tmp/kb_subset_builds --time-budget 2 --timeout 240 --no-compile > "$OUT/cheats.log" 2>&1
echo "gpu_campaign exit $?" >> "$OUT/cheats.log"
cp "$work/"* "$OUT/" 2>/dev/null
tail -n 30 "$OUT/cheats.log"
