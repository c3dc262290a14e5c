#!/usr/bin/env bash
# The CUDA kernels on a GPU machine, against a build staged elsewhere (kernels/tests/gpu/stage.sh):
#   kernels/tests/gpu/run.sh DIR [--no-bench] [bench arguments]
# Runs the Python GPU tests (against torch), the public shape suite (bench/gpu/shapes.py), then
# the Rust CUDA tests (every kernel against the CPU backend), printing each stage's summary.
# Logs and tables go to $OUT (or /tmp). Each stage runs under a time limit (seconds):
# RFFI_GPU_PYTEST_S (600), RFFI_GPU_BENCH_S (900), RFFI_GPU_RUST_S per test binary (300), so
# one stage that hangs cannot take the others' output with it.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
BUILD="$(cd "$1" && pwd)"
shift
OUT="${OUT:-/tmp}"
BENCH=1
if [ "${1:-}" = "--no-bench" ]; then BENCH=0; shift; fi
export PYTHONUNBUFFERED=1 RFFI_LIBRARY_PATH="$BUILD/librffi.so"
export RFFI_KERNELS_PLUGIN="$BUILD/librffi_kernels_plugin.so"
export PYTHONPATH="$ROOT/ffi-python:$ROOT/kernels/python${PYTHONPATH:+:$PYTHONPATH}"
cd "$ROOT"
nvidia-smi -L
python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name())'
status=0
echo "== pytest kernels/tests/gpu"
timeout "${RFFI_GPU_PYTEST_S:-600}" python3 -m pytest -q -p no:cacheprovider --maxfail=30 \
    kernels/tests/gpu >"$OUT/pytest-gpu.log" 2>&1 || status=1
grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/pytest-gpu.log" | tail -40
if [ "$BENCH" = 1 ]; then
  echo "== bench/gpu/shapes.py"
  timeout "${RFFI_GPU_BENCH_S:-900}" python3 bench/gpu/shapes.py --out "$OUT" "$@" \
      >"$OUT/bench.log" 2>&1 || status=1
  grep -E "MISMATCH|Error|error" "$OUT/bench.log" | head -20
  # The table (or, when cut short, the rows measured so far).
  if grep -q '^copy limit' "$OUT/bench.log"; then sed -n '/^copy limit/,$p' "$OUT/bench.log"
  else tail -80 "$OUT/bench.log"; fi
fi
# The Rust tests last: they compile every module of every dtype, the longest stage.
for t in "$BUILD"/test-*; do
  echo "== $(basename "$t")"
  timeout "${RFFI_GPU_RUST_S:-300}" "$t" --test-threads=1 >"$OUT/$(basename "$t").log" 2>&1 || status=1
  grep -E -A2 "^test .*FAILED|test result|panicked" "$OUT/$(basename "$t").log" | grep -v "^--" | head -30
done
exit $status
