#!/usr/bin/env bash
# The CUDA kernels on a GPU machine, against a build staged elsewhere (kernels/tests/gpu/stage.sh):
#   kernels/tests/gpu/run.sh DIR [--no-bench] [bench arguments]
# Runs the public shape suite (bench/gpu/shapes.py), the launch-overhead bench
# (bench/gpu/launch.py), the Python GPU tests (against torch), the Rust CUDA tests (every kernel
# against the CPU backend), then the suite's parts again under each tuning variant staged in
# DIR/tune-* (bench/gpu/variants.py; a variant holding its own librffi_kernels_plugin.so, staged
# by stage.sh DIR --variant, runs with it) with their GPU tests, printing each stage's summary.
# Logs and tables go to $OUT (or /tmp). Each stage runs under a time limit (seconds):
# RFFI_GPU_PYTEST_S (600), RFFI_GPU_BENCH_S (900), RFFI_GPU_LAUNCH_S (120), RFFI_GPU_VARIANT_S
# per variant (120) and RFFI_GPU_VARIANT_TEST_S for its GPU tests (120: the tests of the parts it
# concerns, under its configs), RFFI_GPU_RUST_S per test binary (300), so
# one stage that hangs cannot take the others' output with it; a limit of 0 skips the launch
# bench, the GPU pytest or the Rust tests. Bench arguments (`--only PARTS`, `--match CASES`)
# apply to the variants' runs too (a variant keeps its own parts). RFFI_GPU_NCU: see below.
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
if [ "$BENCH" = 1 ]; then
  echo "== bench/gpu/shapes.py"
  timeout "${RFFI_GPU_BENCH_S:-900}" python3 bench/gpu/shapes.py --out "$OUT" "$@" \
      >"$OUT/bench.log" 2>&1 || status=1
  grep -E "MISMATCH|Error|error" "$OUT/bench.log" | head -20
  # The table (or, when cut short, the rows measured so far).
  if grep -q '^copy limit' "$OUT/bench.log"; then sed -n '/^copy limit/,$p' "$OUT/bench.log"
  else tail -80 "$OUT/bench.log"; fi
fi
# Launch overhead of a tiny op from Python, against torch (bench/gpu/launch.py).
if [ "${RFFI_GPU_LAUNCH_S:-120}" != 0 ]; then
  echo "== bench/gpu/launch.py"
  timeout "${RFFI_GPU_LAUNCH_S:-120}" python3 bench/gpu/launch.py --out "$OUT" >"$OUT/launch.log" 2>&1 ||
    status=1
  tail -12 "$OUT/launch.log"
fi
if [ "${RFFI_GPU_PYTEST_S:-600}" != 0 ]; then
  echo "== pytest kernels/tests/gpu"
  timeout "${RFFI_GPU_PYTEST_S:-600}" python3 -m pytest -q -p no:cacheprovider --maxfail=30 \
      --durations=10 kernels/tests/gpu/test_shapes_torch.py kernels/tests/gpu/test_kernels_cuda.py \
      >"$OUT/pytest-gpu.log" 2>&1 || status=1
  grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/pytest-gpu.log" | tail -40
fi
# Kernels profiled by Nsight Compute where the machine has it: RFFI_GPU_NCU is a list of
# "CASES=KERNEL" separated by ';', CASES the suite's cases (`--match`, e.g. "softmax float32 256
# x 262144") and KERNEL a regex of the kernel's name (e.g. softmax_pipe). For each, the kernel's
# third launch (after the check and the warm-up) is profiled, at the clocks as found
# (--clock-control none): speed of light, memory, warp stalls, occupancy (bench arguments such as
# `--only softmax` apply), each under RFFI_GPU_NCU_S seconds. $OUT/ncu-N.log hold the reports.
if [ -n "${RFFI_GPU_NCU:-}" ]; then
  ncu="$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)"
  n=0
  IFS=';' read -ra specs <<<"$RFFI_GPU_NCU"
  for spec in "${specs[@]}"; do
    n=$((n + 1))
    cases="${spec%%=*}" kernel="${spec#*=}"
    [ "$kernel" != "$spec" ] || kernel=.
    echo "== ncu $n: $kernel in '$cases'"
    if [ -z "$ncu" ]; then echo "ncu: not found on this machine"; break; fi
    timeout "${RFFI_GPU_NCU_S:-180}" "$ncu" --clock-control none --section SpeedOfLight \
        --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy \
        --section LaunchStats -k "regex:$kernel" -s 2 -c 1 \
        python3 bench/gpu/shapes.py "$@" --match "$cases" >"$OUT/ncu-$n.log" 2>&1 || status=1
    sed -n '/==PROF==/,$p' "$OUT/ncu-$n.log" | grep -vE "^  [a-z_]+ [a-z0-9]+ .* ms  torch" | tail -90
  done
fi
# The Rust tests: every kernel against the CPU backend.
for t in "$BUILD"/test-*; do
  [ "${RFFI_GPU_RUST_S:-300}" != 0 ] || break
  echo "== $(basename "$t")"
  timeout "${RFFI_GPU_RUST_S:-300}" "$t" --test-threads=1 >"$OUT/$(basename "$t").log" 2>&1 || status=1
  grep -E -A2 "^test .*FAILED|test result|panicked" "$OUT/$(basename "$t").log" | grep -v "^--" | head -30
done
# Tuning variants staged by bench/gpu/variants.py: the parts of the suite they concern, again.
if [ "$BENCH" = 1 ]; then
  for d in "$BUILD"/tune-*; do
    [ -d "$d" ] || continue
    name="$(basename "$d")"
    # A variant staged with its own kernels plugin (stage.sh DIR --variant) runs with it.
    plugin="$BUILD/librffi_kernels_plugin.so"
    [ -f "$d/librffi_kernels_plugin.so" ] && plugin="$d/librffi_kernels_plugin.so"
    echo "== $name: bench/gpu/shapes.py --only $(cat "$d/ONLY") $(cat "$d/SOURCE" 2>/dev/null)"
    mkdir -p "$OUT/$name"
    RFFI_KERNELS_PLUGIN="$plugin" RFFI_KERNELS_TUNE_DIR="$d" timeout "${RFFI_GPU_VARIANT_S:-120}" \
        python3 bench/gpu/shapes.py "$@" --only "$(cat "$d/ONLY")" --out "$OUT/$name" \
        >"$OUT/$name/bench.log" 2>&1 || status=1
    grep -E "MISMATCH|Error" "$OUT/$name/bench.log" | head -5
    grep -E "^\| " "$OUT/$name/bench.log" | grep -v "^| op |"
    # The GPU tests of the same parts under the variant (test names hold the part's name).
    if [ "${RFFI_GPU_VARIANT_TEST_S:-120}" != 0 ]; then
      RFFI_KERNELS_PLUGIN="$plugin" RFFI_KERNELS_TUNE_DIR="$d" \
          timeout "${RFFI_GPU_VARIANT_TEST_S:-120}" python3 -m pytest -q \
          -p no:cacheprovider -k "$(sed 's/,/ or /g' "$d/ONLY")" kernels/tests/gpu/test_shapes_torch.py \
          >"$OUT/$name/pytest-gpu.log" 2>&1 || status=1
      grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/$name/pytest-gpu.log" | tail -8
    fi
  done
fi
exit $status
