#!/usr/bin/env bash
# Builds librffi.so (release) and the C-ABI benchmark, installs tvm-ffi into a bench venv, and
# runs both runtimes side by side. Usage: bench/run.sh
set -euo pipefail
cd "$(dirname "$0")/.."
TVM_FFI_VERSION=0.1.15.post2
VENV=.venv-bench
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
"$VENV/bin/python" -c "import tvm_ffi" 2>/dev/null ||
  "$VENV/bin/pip" install -q "apache-tvm-ffi==$TVM_FFI_VERSION"
TVM_LIB=$("$VENV/bin/python" -c "import os, tvm_ffi; print(os.path.join(os.path.dirname(tvm_ffi.__file__), 'lib'))")
cargo build --release -q -p rffi-c
mkdir -p target/bench
cc -std=c99 -O2 -Wall -Wextra -Iinclude bench/c_abi_bench.c -o target/bench/c_abi_bench -ldl
echo "C ABI, ns per operation (tvm-ffi $TVM_FFI_VERSION; $(nproc) cores; $(date -u +%Y-%m-%d))"
target/bench/c_abi_bench "$PWD/target/release/librffi.so" "$TVM_LIB/libtvm_ffi.so" "$TVM_LIB/libtvm_ffi_testing.so"
