#!/usr/bin/env bash
# The NCCL tests on a GPU machine, against a build made elsewhere (that machine needs no Rust):
#   sessions/tests/gpu/stage.sh                  # here: builds and copies into target/devccl
#   sessions/tests/gpu/run.sh target/devccl      # there (python3 with torch and numpy)
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
BUILD="$(cd "${1:-$ROOT/target/release}" && pwd)"
OUT="${OUT:-/tmp}"
source "$ROOT/sessions/tests/gpu/env.sh"
nvidia-smi -L
python3 -c 'import torch; print("torch", torch.__version__, "GPUs:", torch.cuda.device_count(), "NCCL (torch):", torch.cuda.nccl.version())'
cd "$ROOT" && python3 -m pytest -v -s -rs -p no:cacheprovider sessions/tests/gpu 2>&1 | tee "$OUT/ccl-gpu.log"
