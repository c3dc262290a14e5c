#!/usr/bin/env bash
# Builds hosts against an installed rffi, as users do: a CMake project (find_package(rffi)) and a
# pkg-config Makefile, first against `make install PREFIX=...` (also after moving the prefix),
# then against the wheel installed in target/py-venv (`python -m rffi --cmakedir` and friends).
# Needs the release library and the venv of `make python-test`; installs cmake there with pip.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
PY="${RFFI_PY_VENV:-$ROOT/target/py-venv}/bin/python"
T="$ROOT/target/install-test"
rm -rf "$T"
mkdir -p "$T"
"$PY" -m pip install -q --disable-pip-version-check cmake
CMAKE="$(dirname "$PY")/cmake"
PLUGIN_NAME=libcpp_plugin.so

cmake_build() {  # <build dir> <cmake args...>
  local dir="$1"
  shift
  "$CMAKE" -S tests/install/cmake -B "$dir" -DCMAKE_BUILD_TYPE=Release "$@" >"$dir.log" 2>&1 \
    || { cat "$dir.log"; exit 1; }
  "$CMAKE" --build "$dir" -j 2 >>"$dir.log" 2>&1 || { cat "$dir.log"; exit 1; }
  "$dir/cpp_host" "$dir/$PLUGIN_NAME"
  "$dir/c_host"
}

pkgconfig_build() {  # <out dir> <pkgconfig dir>
  mkdir -p "$1"
  PKG_CONFIG_PATH="$2" make -s -C tests/install/pkgconfig OUT="$1" >/dev/null
  "$1/c_host"
}

echo "== make install PREFIX=$T/prefix =="
make -s install PREFIX="$T/prefix" >/dev/null
test -f "$T/prefix/lib/librffi.so" && test -f "$T/prefix/include/rffi/rffi.hpp"
echo "-- CMake, CMAKE_PREFIX_PATH=<prefix>"
cmake_build "$T/cmake-prefix" -DCMAKE_PREFIX_PATH="$T/prefix"
echo "-- pkg-config Makefile"
pkgconfig_build "$T/pc-prefix" "$T/prefix/lib/pkgconfig"
echo "-- pkg-config Makefile, after moving the prefix"
mv "$T/prefix" "$T/moved-prefix"
pkgconfig_build "$T/pc-moved" "$T/moved-prefix/lib/pkgconfig"
# A version the package does not provide is refused, naming the version it has.
mkdir -p "$T/want9"
printf 'cmake_minimum_required(VERSION 3.15)\nproject(want9 LANGUAGES NONE)\nfind_package(rffi 9.0 REQUIRED)\n' \
  >"$T/want9/CMakeLists.txt"
if "$CMAKE" -S "$T/want9" -B "$T/want9/build" -DCMAKE_PREFIX_PATH="$T/moved-prefix" \
    >"$T/want9.log" 2>&1; then
  echo "find_package(rffi 9.0) must fail" >&2
  exit 1
fi
grep -q "version: 0\.\|0\.[0-9]*\.[0-9]" "$T/want9.log" || { cat "$T/want9.log"; exit 1; }
echo "-- find_package(rffi 9.0) refused"

echo "== the wheel in $(dirname "$(dirname "$PY")") =="
for opt in --includedir --libdir --cmakedir --pkgconfigdir --cflags --ldflags; do
  answer="$("$PY" -m rffi "$opt")"
  printf '  python -m rffi %-14s %s\n' "$opt" "$answer"
done
echo "-- CMake, rffi_DIR=\$(python -m rffi --cmakedir)"
cmake_build "$T/cmake-wheel" -Drffi_DIR="$("$PY" -m rffi --cmakedir)"
echo "-- pkg-config Makefile, PKG_CONFIG_PATH=\$(python -m rffi --pkgconfigdir)"
pkgconfig_build "$T/pc-wheel" "$("$PY" -m rffi --pkgconfigdir)"
echo "-- cc \$(python -m rffi --cflags) ... \$(python -m rffi --ldflags)"
# shellcheck disable=SC2046
${CC:-cc} -std=c99 -Wall -Werror $("$PY" -m rffi --cflags) tests/install/host.c \
  -o "$T/c_host_flags" $("$PY" -m rffi --ldflags)
"$T/c_host_flags"
echo "install tests: all passed"
