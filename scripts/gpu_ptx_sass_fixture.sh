#!/usr/bin/env bash
# What the GPU ran, on a GPU host, in one call (issue #19): builds four of the demo archive's CUDA
# kernels, a kernel that spills and a ModelNew the way the verifier builds them, lists their SASS,
# PTX and resource usage (verifier/gpu_binary.py), keeps every raw tool output, and profiles one
# kernel with ncu's SourceCounters (verifier/ncu_profile.py). scripts/gpu_ptx_sass_fixture.py does
# the work; tests/fixtures/h200/gpu_binary/ holds what came back, trimmed.
#
#   OUT=dir bash scripts/gpu_ptx_sass_fixture.sh [SECONDS]
#
# Back in $OUT: ptx_sass.tar.gz (raw/ and results/), summary.json, listings.json.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:?set OUT to the results directory}
budget=${1:-220}
work=/tmp/gpu_ptx_sass
rm -rf "$work" && mkdir -p "$work/raw" "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD VERIFIER_BUILD_DIR=/tmp/kb_ptx_sass_builds MAX_JOBS=4
export PATH=$PATH:/usr/local/cuda/bin
{
  nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
  for tool in nvcc cuobjdump nvdisasm ptxas ncu cu++filt c++filt; do echo "== $tool: $(command -v $tool)"; done
  nvcc --version | tail -2; cuobjdump --version | tail -1; nvdisasm --version | tail -1; ptxas --version | tail -1
  ncu --version | tail -1; c++filt --version | head -1
} > "$work/raw/versions.txt" 2>&1
cat "$work/raw/versions.txt"
timeout "$budget" python3 scripts/gpu_ptx_sass_fixture.py --work "$work" > "$work/raw/run.log" 2>&1
echo "exit $?" >> "$work/raw/run.log"
tail -n 40 "$work/raw/run.log"
cp "$work/results/"*.json "$OUT/" 2>/dev/null
tar czf "$OUT/ptx_sass.tar.gz" -C "$work" raw results
ls -la "$OUT"
