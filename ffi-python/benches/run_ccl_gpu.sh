#!/usr/bin/env bash
# Allreduce on GPUs: rffi's NCCL collectives through a ProcessSession against torch.distributed on
# NCCL, same ranks and GPUs, in one run (ffi-python/benches/bench_ccl.py --backend nccl). Runs on
# a machine with as many GPUs as workers (NCCL takes one rank per GPU), python3 with torch and
# numpy, against a build made elsewhere:
#   sessions/tests/gpu/stage.sh                                   # here: into target/devccl
#   ffi-python/benches/run_ccl_gpu.sh target/devccl --workers 2   # there
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="$(cd "${1:?usage: run_ccl_gpu.sh BUILD_DIR [bench_ccl.py options]}" && pwd)"
shift
source "$ROOT/sessions/tests/gpu/env.sh"
export PYTHONPATH="$ROOT/ffi-python/benches:$PYTHONPATH"
python3 "$ROOT/ffi-python/benches/bench_ccl.py" --backend nccl "$@"
