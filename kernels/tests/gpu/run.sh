#!/usr/bin/env bash
# The CUDA kernels on a GPU machine, against a build staged elsewhere (kernels/tests/gpu/stage.sh):
#   kernels/tests/gpu/run.sh DIR [--no-bench] [bench arguments]
# Runs the Rust CUDA tests (every kernel against the CPU backend), the Python GPU tests (against
# torch), then the public shape suite (bench/gpu/shapes.py). Logs and tables go to $OUT (or
# /tmp); the last lines printed are the summary table.
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
for t in "$BUILD"/test-*; do
  echo "== $(basename "$t")"
  "$t" --test-threads=1 >"$OUT/$(basename "$t").log" 2>&1 || status=1
  grep -E "^test |test result|panicked|skipping" "$OUT/$(basename "$t").log" | head -40
done
echo "== pytest kernels/tests/gpu"
python3 -m pytest -q -p no:cacheprovider -x kernels/tests/gpu >"$OUT/pytest-gpu.log" 2>&1 || status=1
tail -25 "$OUT/pytest-gpu.log"
if [ "$BENCH" = 1 ]; then
  echo "== bench/gpu/shapes.py"
  python3 bench/gpu/shapes.py --out "$OUT" "$@" >"$OUT/bench.log" 2>&1 || status=1
  grep -E "MISMATCH|Error|error" "$OUT/bench.log" | head -20
  sed -n '/^copy limit/,$p' "$OUT/bench.log"
fi
exit $status
