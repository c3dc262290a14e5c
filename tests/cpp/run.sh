#!/usr/bin/env bash
# Builds the C++ API tests and the C++ examples (examples/cpp-host, examples/cpp-plugin) with
# `g++ -std=c++17 -Wall -Wextra -Werror` against include/ and the release librffi.so
# (`cargo build --release -p rffi-c -p rffi-example-rust-plugin` first), and runs them under
# valgrind (definite leaks and memory errors fail) when valgrind is installed.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
LIB="$ROOT/target/release"
OUT="$ROOT/target/cpp-tests"
CXX="${CXX:-g++}"
FLAGS=(-std=c++17 -Wall -Wextra -Werror -g -I"$ROOT/include")
mkdir -p "$OUT"
cd "$ROOT"

# The C++ plugin (RFFI_PLUGIN: links nothing), and a second copy for the failing-init test (a
# library file is loaded once per process).
"$CXX" "${FLAGS[@]}" -shared -fPIC tests/cpp/plugin.cc tests/cpp/plugin_more.cc \
    -o "$OUT/libcpp_test_plugin.so"
cp "$OUT/libcpp_test_plugin.so" "$OUT/libcpp_test_plugin_copy.so"
if ldd "$OUT/libcpp_test_plugin.so" | grep -q librffi; then
    echo "the RFFI_PLUGIN test plugin must not link librffi.so" >&2
    exit 1
fi
"$CXX" "${FLAGS[@]}" tests/cpp/test_cpp_api.cc -o "$OUT/test_cpp_api" \
    -L"$LIB" -lrffi -Wl,-rpath,"$LIB"
# The headers also build as C++20 (a compile check of every header).
"$CXX" -std=c++20 -Wall -Wextra -Werror -fsyntax-only -I"$ROOT/include" tests/cpp/test_cpp_api.cc

# valgrind comes with the machines this project runs on; where it is missing it is installed
# when apt-get can (as fuzz/setup.sh does), else the tests run without it, saying so.
if ! command -v valgrind >/dev/null && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind) >/dev/null \
        || true
fi
RUN=()
if command -v valgrind >/dev/null; then
    # Blocks reached only through an interior pointer (a hash table's control bytes) are
    # "possibly lost" in a run that ends with the runtime alive: not reported; definite leaks fail.
    RUN=(valgrind -q --leak-check=full --show-possibly-lost=no --errors-for-leak-kinds=definite
        --error-exitcode=99)
else
    echo "(valgrind not installed: running without it)"
fi
log="$OUT/test_cpp_api.log"
"${RUN[@]}" "$OUT/test_cpp_api" "$OUT/libcpp_test_plugin.so" "$OUT/libcpp_test_plugin_copy.so" \
    2>&1 | tee "$log"
grep -q " 0 failed" "$log"

# The example host, loading the example C++ plugin and the Rust one, as `make demo` runs it.
"$CXX" "${FLAGS[@]}" -shared -fPIC examples/cpp-plugin/plugin.cc -o "$OUT/libcpp_plugin.so"
"$CXX" "${FLAGS[@]}" examples/cpp-host/main.cc -o "$OUT/cpp-host" \
    -L"$LIB" -lrffi -Wl,-rpath,"$LIB"
"${RUN[@]}" "$OUT/cpp-host" "$OUT/libcpp_plugin.so" "$LIB/librffi_example_rust_plugin.so"
