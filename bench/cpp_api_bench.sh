#!/usr/bin/env bash
# Builds librffi.so (release) and the C++ API benchmark (-O2), and prints its table.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p rffi-c
mkdir -p target/bench
c++ -std=c++17 -O2 -Wall -Wextra -Iinclude bench/cpp_api_bench.cc -o target/bench/cpp_api_bench \
  -Ltarget/release -lrffi -Wl,-rpath,"$PWD/target/release"
echo "C++ API vs the C ABI, ns per call ($(nproc) cores; $(date -u +%Y-%m-%d))"
target/bench/cpp_api_bench
