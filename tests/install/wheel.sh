#!/usr/bin/env bash
# The wheel as users get it: built by `pip wheel ./ffi-python`, checked with auditwheel (its
# manylinux tag must be the one auditwheel derives), its contents (stripped binaries, headers,
# CMake and pkg-config files, LICENSE, py3-none: one wheel for every CPython >= 3.9), an sdist
# that installs with `pip install rffi-*.tar.gz`, and the README's Python tour run as written from
# an empty folder in fresh venvs (one with the wheel, one with the sdist).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
PY="${RFFI_PY_VENV:-$ROOT/target/py-venv}/bin/python"
T="$ROOT/target/wheel-test"
rm -rf "$T"
mkdir -p "$T/dist"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
unset RFFI_LIBRARY_PATH

echo "== pip wheel ./ffi-python =="
"$PY" -m pip wheel -q --disable-pip-version-check --no-deps -w "$T/dist" ./ffi-python
WHEEL="$(ls "$T"/dist/rffi-*.whl)"
NAME="$(basename "$WHEEL")"
echo "$NAME ($(du -k "$WHEEL" | cut -f1) KiB)"
case "$NAME" in
  rffi-*-py3-none-manylinux_*_x86_64.whl | rffi-*-py3-none-manylinux_*_aarch64.whl) ;;
  *) echo "expected a py3-none-manylinux_* wheel, got $NAME" >&2; exit 1 ;;
esac

# One version for the crates and the Python package (Cargo.toml [workspace.package]).
CARGO_VERSION="$(python3 -c 'import sys; sys.path.insert(0, "packaging"); import install_files; print(install_files.version())')"
case "$NAME" in
  "rffi-$CARGO_VERSION-"*) ;;
  *) echo "the wheel's version differs from the workspace version $CARGO_VERSION" >&2; exit 1 ;;
esac

echo "== auditwheel show =="
"$PY" -m pip install -q --disable-pip-version-check auditwheel
TAG="${NAME#*-py3-none-}"
TAG="${TAG%.whl}"
"$(dirname "$PY")/auditwheel" show "$WHEEL" | tee "$T/auditwheel.txt"
tr -s ' \n' ' ' <"$T/auditwheel.txt" | grep -q "consistent with the following platform tag: \"$TAG\"" \
  || { echo "auditwheel does not confirm $TAG" >&2; exit 1; }

echo "== contents =="
mkdir -p "$T/unpacked"
(cd "$T/unpacked" && "$PY" -m zipfile -e "$WHEEL" .)
U="$T/unpacked"
for f in rffi/librffi.so rffi/rffi-worker rffi/examples/libc_plugin.so rffi/include/rffi/c_api.h \
  rffi/include/rffi/rffi.hpp rffi/share/cmake/rffi/rffiConfig.cmake \
  rffi/share/pkgconfig/rffi.pc rffi/py.typed; do
  test -f "$U/$f" || { echo "missing in the wheel: $f" >&2; exit 1; }
done
cmp "$U"/rffi-*.dist-info/licenses/LICENSE LICENSE
grep -q "^License-Expression: Apache-2.0" "$U"/rffi-*.dist-info/METADATA
grep -q "^Requires-Python: >=3.9" "$U"/rffi-*.dist-info/METADATA
grep -q "^Root-Is-Purelib: false" "$U"/rffi-*.dist-info/WHEEL
# Every ELF file in the wheel is stripped.
find "$U/rffi" -type f | while read -r bin; do
  [ "$(head -c 4 "$bin" | od -An -c | tr -d ' ')" = "177ELF" ] || continue
  if readelf -S --wide "$bin" | grep -qE '\.symtab|\.debug_(info|line|str|abbrev|ranges)'; then
    echo "${bin#"$U"/} is not stripped" >&2
    exit 1
  fi
done
echo "stripped: librffi.so $(du -k "$U/rffi/librffi.so" | cut -f1) KiB, rffi-worker $(du -k "$U/rffi/rffi-worker" | cut -f1) KiB"

echo "== an sdist that builds without the checkout (the workspace rides along in rust/) =="
"$PY" -m pip install -q --disable-pip-version-check build
(cd ffi-python && "$PY" -m build --sdist -o "$T/sdist" . >"$T/sdist.log" 2>&1) || { cat "$T/sdist.log"; exit 1; }
SDIST="$(ls "$T"/sdist/rffi-*.tar.gz)"
tar tzf "$SDIST" >"$T/sdist.txt"
grep -q "/rust/packaging/install_files.py" "$T/sdist.txt"
echo "-- pip install $(basename "$SDIST"), in a fresh virtualenv"
python3 -m venv "$T/sdist-venv"
"$T/sdist-venv/bin/python" -m pip install -q --disable-pip-version-check "$SDIST" numpy

echo "== the README's Python tour, from an empty folder, in a fresh virtualenv =="
python3 -m venv "$T/venv"
"$T/venv/bin/python" -m pip install -q --disable-pip-version-check "$WHEEL" numpy
"$PY" - "$ROOT/README.md" "$T/tour.py" <<'PYEOF'
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
section = text.split("## A tour of the Python API", 1)[1]
code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
open(sys.argv[2], "w", encoding="utf-8").write(code)
PYEOF
mkdir -p "$T/empty"
(cd "$T/empty" && "$T/venv/bin/python" "$T/tour.py")
echo "-- the same, installed from the sdist"
(cd "$T/empty" && "$T/sdist-venv/bin/python" "$T/tour.py")
echo "wheel tests: all passed"
