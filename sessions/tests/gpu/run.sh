#!/usr/bin/env bash
# The NCCL tests on a GPU machine, against a build made elsewhere (that machine needs no Rust):
#   cargo build --release -p rffi-c -p rffi-session        # here
#   mkdir -p .devccl && cp target/release/{librffi.so,librffi_python_native.so,rffi-worker} .devccl/
#   sessions/tests/gpu/run.sh .devccl                        # there (python3 with torch)
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
BUILD="$(cd "${1:-$ROOT/target/release}" && pwd)"
OUT="${OUT:-/tmp}"
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
export RFFI_LIBRARY_PATH="$BUILD/librffi.so" RFFI_WORKER="$BUILD/rffi-worker"
export PYTHONPATH="$ROOT/ffi-python:$ROOT/sessions/tests/gpu${PYTHONPATH:+:$PYTHONPATH}"
# cudarc opens NCCL by the names libnccl.so, libnccl.so.13 ... libnccl.so.1, not libnccl.so.2
# (the name NCCL's packages install): give it the first where only the versioned one exists.
if ! ldconfig -p | grep -q 'libnccl\.so '; then
  lib=$(ldconfig -p | grep -o '/[^ ]*libnccl\.so\.2$' | head -1)
  [ -z "$lib" ] && lib=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(nvidia.nccl.__path__[0], "lib", "libnccl.so.2"))' 2>/dev/null)
  mkdir -p /tmp/rffi-nccl && ln -sf "$lib" /tmp/rffi-nccl/libnccl.so
  export LD_LIBRARY_PATH="/tmp/rffi-nccl${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "libnccl.so -> $lib"
fi
nvidia-smi -L
python3 -c 'import torch; print("torch", torch.__version__, "GPUs:", torch.cuda.device_count(), "NCCL (torch):", torch.cuda.nccl.version())'
cd "$ROOT" && python3 -m pytest -v -s -rs -p no:cacheprovider sessions/tests/gpu 2>&1 | tee "$OUT/ccl-gpu.log"
