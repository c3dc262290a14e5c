#!/usr/bin/env bash
# The package's type stubs against the installed package (run by test.sh, after the install):
#   1. `mypy --strict` on a user program that uses the public API (ffi-python/typecheck/), which
#      then runs, so the types it states are the ones the package returns;
#   2. `python -m mypy.stubtest rffi`: every public name and signature in the stubs matches the
#      runtime, with the allowlist ffi-python/typecheck/stubtest-allowlist.txt (each entry says why).
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
"$PY" -m mypy.stubtest rffi --mypy-config-file "$WORK/mypy.ini" \
  --allowlist "$HERE/stubtest-allowlist.txt"
