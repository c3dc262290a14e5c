#!/usr/bin/env bash
# Builds what the GPU-machine scripts need (that machine has no Rust) and copies it, without debug
# info, into DIR (default target/devccl, ignored by git; name it in the device tool's `carry`):
# librffi.so, librffi_python_native.so and rffi-worker. Then, there:
#   sessions/tests/gpu/run.sh target/devccl                 # the NCCL tests
#   ffi-python/benches/run_ccl_gpu.sh target/devccl         # allreduce vs torch.distributed
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
DIR="$(mkdir -p "${1:-$ROOT/target/devccl}" && cd "${1:-$ROOT/target/devccl}" && pwd)"
cd "$ROOT"
cargo build --release -p rffi-c -p rffi-session -p rffi-python-native
cp target/release/librffi.so target/release/librffi_python_native.so target/release/rffi-worker "$DIR/"
strip --strip-debug "$DIR"/*.so "$DIR"/rffi-worker
ls -la "$DIR"
