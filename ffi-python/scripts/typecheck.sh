#!/usr/bin/env bash
# The package's type stubs against the installed package (run by test.sh, after the install):
#   1. `mypy --strict` on a user program that uses the public API (ffi-python/typecheck/), which
#      then runs, so the types it states are the ones the package returns;
#   2. `python -m mypy.stubtest rffi` on both call paths: every public name and signature in the
#      stubs matches the runtime, with the allowlists in ffi-python/typecheck/ (each entry says
#      why).
# Usage: ffi-python/scripts/typecheck.sh <python of a venv with rffi and mypy installed>
set -euo pipefail
PY="$1"
HERE="$(cd "$(dirname "$0")/../typecheck" && pwd)"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"  # away from the sources: `rffi` is the installed package

echo "== mypy --strict (a user program), then the program itself =="
"$PY" -m mypy --strict --no-incremental --cache-dir "$WORK/cache" "$HERE/user_program.py"
"$PY" "$HERE/user_program.py"

echo "== stubtest rffi =="
# The implementation modules (rffi._*) ship without stubs and are not API: mypy does not check
# their bodies here (their public names are checked where the API exposes them, in `rffi`).
PKG="$("$PY" -c 'import os, rffi; print(os.path.dirname(rffi.__file__))')"
PRIVATE="$(cd "$PKG" && ls _[a-z]*.py | sed 's/\.py$//; s/^/rffi./' | paste -sd, -)"
printf '[mypy]\n[mypy-%s]\nignore_errors = True\n' "$PRIVATE" > "$WORK/mypy.ini"
# On both call paths: some classes are native types on the fast path.
FAST="$("$PY" -c 'import rffi._core as c; print(int(c.FASTPATH))')"
if [ "$FAST" = 1 ]; then
  echo "-- native fast path --"
  "$PY" -m mypy.stubtest rffi --mypy-config-file "$WORK/mypy.ini" \
    --allowlist "$HERE/stubtest-allowlist.txt" --allowlist "$HERE/stubtest-allowlist-fastpath.txt"
fi
echo "-- ctypes path (RFFI_PYTHON_FASTPATH=0) --"
RFFI_PYTHON_FASTPATH=0 "$PY" -m mypy.stubtest rffi --mypy-config-file "$WORK/mypy.ini" \
  --allowlist "$HERE/stubtest-allowlist.txt"
