#!/usr/bin/env bash
# Builds what the GPU run needs on a machine with Rust (the GPU machine has none) and copies it,
# stripped, into DIR (default .devkern, which the repository's .git/info/exclude should ignore):
# librffi.so, librffi_python_native.so, librffi_kernels_plugin.so, and the CUDA crate's test
# binaries as test-cuda and test-shapes. Then, on the GPU machine: kernels/tests/gpu/run.sh DIR
#
#   stage.sh DIR --variant NAME PARTS
#
# stages only this checkout's kernels plugin as a variant of the build already in DIR (another
# branch's kernels against DIR's, in one run): DIR/tune-NAME/ gets the plugin, this checkout's
# built-in tuning and ONLY (PARTS of bench/gpu/shapes.py, e.g. softmax,norms); run.sh runs those
# parts and their GPU tests with it, as it does the tuning variants of bench/gpu/variants.py.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
DIR="$(mkdir -p "${1:-$ROOT/.devkern}" && cd "${1:-$ROOT/.devkern}" && pwd)"
cd "$ROOT"
if [ "${2:-}" = "--variant" ]; then
  [ $# -eq 4 ] || { echo "usage: stage.sh DIR --variant NAME PARTS" >&2; exit 2; }
  V="$DIR/tune-$3"
  rm -rf "$V" && mkdir -p "$V/cuda"
  cargo build --release -p rffi-kernels-plugin
  cp target/release/librffi_kernels_plugin.so "$V/"
  cp kernels/tune/cuda/*.json "$V/cuda/"
  echo "$4" >"$V/ONLY"
  strip --strip-debug "$V/librffi_kernels_plugin.so"
  echo "tune-$3: $4 ($(git rev-parse --short HEAD))" | tee "$V/SOURCE"
  exit 0
fi
cargo build --release -p rffi-c -p rffi-python-native -p rffi-kernels-plugin
cp target/release/librffi.so target/release/librffi_python_native.so \
    target/release/librffi_kernels_plugin.so "$DIR/"
# The test binaries: cargo prints their paths.
cargo test --release -p rffi-kernels-cuda --tests --no-run --message-format=json 2>/dev/null |
    python3 -c '
import json, shutil, sys
dest = sys.argv[1]
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["test"]:
        shutil.copy(m["executable"], dest + "/test-" + m["target"]["name"])
' "$DIR"
strip --strip-debug "$DIR"/*.so "$DIR"/test-*
ls -la "$DIR"
