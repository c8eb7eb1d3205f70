#!/usr/bin/env bash
# One-shot check for an NVIDIA GPU machine without a package registry (under 8 minutes):
# the CUDA conformance suite on the device, the five paper models and SqueezeNet 1.1 for
# `cuda` against ONNX Runtime CPU, timed next to PyTorch CUDA eager (and torch.compile)
# at batch 1 and 16; a Markdown table and JSON land in $OUT.
#   OUT=/tmp/out bash benchmarks/gpu_check.sh            # on the GPU machine
#   OUT=/tmp/out bash benchmarks/gpu_check.sh --dry      # no GPU: stops at the launch (CI)
# Extra arguments go to benchmarks/gpu_check.py (--models, --batches, --repeat ...).
# Assumes Python with numpy, onnx, onnxruntime (CPU), cuda-bindings + NVRTC, and maybe
# PyTorch; installs this tree without dependencies when it is not importable.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
OUT="${OUT:-$PWD/gpu_check_out}"
mkdir -p "$OUT"
if ! "$PYTHON" -c "import tensorforge, tensorforge_cuda, tensorforge_onnx" 2>/dev/null; then
    echo "gpu_check: installing this tree (pip --no-deps --no-build-isolation -e)"
    "$PYTHON" -m pip install -q --no-deps --no-build-isolation -e packages/core \
        -e packages/target-llvm -e packages/target-cuda -e packages/frontend-onnx
fi
status=0
timeout "${GPU_CHECK_LIMIT_S:-470}" "$PYTHON" benchmarks/gpu_check.py --out "$OUT" "$@" \
    2>&1 | tee "$OUT/gpu_check.log" || status=$?
echo "gpu_check: exit $status; results in $OUT"
exit "$status"
