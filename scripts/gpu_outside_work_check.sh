#!/usr/bin/env bash
# Harness 2.6.0's checks of work done outside the timed call, on a GPU host, in one call: the
# early-launch attacks and the honest kernels of their size, then every honest timed entry (their
# judge's-clock allowance and measured noise). ONLY=name,... overrides the list.
#
#   OUT=dir [ONLY=...] bash scripts/gpu_outside_work_check.sh [SECONDS]
set -uo pipefail
cd "$(dirname "$0")/.."
default=$(python3 -c "
import json
entries = json.load(open('verifier/cheat_suite/manifest.json'))['entries']
print(','.join(e['name'] for e in entries if 'cuda' in e['devices'] and e.get('timing') and
               (e.get('honest') or e.get('family') == 'work_outside_call')))")
ONLY=${ONLY:-$default} OUT=${OUT:?set OUT to the results directory} bash scripts/gpu_cheat_subset.sh "${1:-480}"
