#!/usr/bin/env bash
# Python benchmarks: rffi (this checkout's library), tvm-ffi 0.1.15.post2 and plain ctypes in one
# process. Uses the bench venv of bench/run.sh (.venv-bench), adding tvm-ffi and numpy there.
# Usage: ffi-python/benches/run.sh [bench_*.py] [arguments]
#   (default bench_calls.py, the call benchmark; bench_structural.py [records]: structural ops)
set -euo pipefail
cd "$(dirname "$0")/../.."
SCRIPT=bench_calls.py
case "${1:-}" in bench_*.py) SCRIPT="$1"; shift ;; esac
VENV=.venv-bench
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/python" -c "import tvm_ffi" 2>/dev/null ||
  "$VENV/bin/pip" install -q "apache-tvm-ffi==0.1.15.post2"
"$VENV/bin/python" -c "import numpy" 2>/dev/null || "$VENV/bin/pip" install -q numpy
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
cargo build --release -q -p rffi-c -p rffi-python-native
# numpy's BLAS threads would spin on the cores the calls are measured on.
export OPENBLAS_NUM_THREADS=1
RFFI_LIBRARY_PATH="$CARGO_TARGET_DIR/release" PYTHONPATH="$PWD/ffi-python" \
  "$VENV/bin/python" "ffi-python/benches/$SCRIPT" "$@"
