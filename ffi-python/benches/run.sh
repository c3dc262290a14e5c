#!/usr/bin/env bash
# Python benchmarks: rffi (this checkout's library), tvm-ffi 0.1.15.post2 and plain ctypes in one
# process. Uses the bench venv of bench/run.sh (.venv-bench), adding tvm-ffi and numpy there.
# Usage: ffi-python/benches/run.sh [bench_*.py] [arguments]
#   (default bench_calls.py, the call benchmark; bench_structural.py [records]: structural ops)
# RFFI_BENCH_PYTHON picks the interpreter (default python3); with it set, the venv is
# .venv-bench-<its X.Y version> unless RFFI_BENCH_VENV names one. The native library serves every
# CPython (stable ABI), so only the venv differs between versions.
set -euo pipefail
cd "$(dirname "$0")/../.."
SCRIPT=bench_calls.py
case "${1:-}" in bench_*.py) SCRIPT="$1"; shift ;; esac
PYTHON="${RFFI_BENCH_PYTHON:-python3}"
if [ -n "${RFFI_BENCH_VENV:-}" ]; then
  VENV="$RFFI_BENCH_VENV"
elif [ -n "${RFFI_BENCH_PYTHON:-}" ]; then
  VENV=".venv-bench-$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
else
  VENV=.venv-bench
fi
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -c "import tvm_ffi" 2>/dev/null ||
  "$VENV/bin/pip" install -q "apache-tvm-ffi==0.1.15.post2"
"$VENV/bin/python" -c "import numpy" 2>/dev/null || "$VENV/bin/pip" install -q numpy
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
cargo build --release -q -p rffi-c -p rffi-python-native
# numpy's BLAS threads would spin on the cores the calls are measured on.
export OPENBLAS_NUM_THREADS=1
RFFI_LIBRARY_PATH="$CARGO_TARGET_DIR/release" PYTHONPATH="$PWD/ffi-python" \
  "$VENV/bin/python" "ffi-python/benches/$SCRIPT" "$@"
