#!/usr/bin/env bash
# Structural operations benchmark: rffi (this checkout's library) and tvm-ffi 0.1.15.post2 in one
# process. Uses the bench venv of bench/run.sh (.venv-bench), adding tvm-ffi there.
# Usage: ffi-python/benches/run_structural.sh [records]
set -euo pipefail
cd "$(dirname "$0")/../.."
VENV=.venv-bench
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/python" -c "import tvm_ffi" 2>/dev/null ||
  "$VENV/bin/pip" install -q "apache-tvm-ffi==0.1.15.post2"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
cargo build --release -q -p rffi-c
RFFI_LIBRARY_PATH="$CARGO_TARGET_DIR/release" PYTHONPATH="$PWD/ffi-python" \
  "$VENV/bin/python" ffi-python/benches/bench_structural.py "$@"
