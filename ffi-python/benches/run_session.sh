#!/usr/bin/env bash
# Session benchmark: rffi's sessions (this checkout, installed with pip) against TVM's Disco
# (apache-tvm 0.27.0.post1) in one run, each measurement in its own process.
# Usage: ffi-python/benches/run_session.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
VENV="$(realpath -m "${RFFI_SESSION_BENCH_VENV:-.venv-session-bench}")"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/python" -c "import tvm.runtime.disco, numpy, psutil" 2>/dev/null ||
  "$VENV/bin/pip" install -q --disable-pip-version-check apache-tvm==0.27.0.post1 numpy psutil
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
"$VENV/bin/pip" install -q --disable-pip-version-check --force-reinstall --no-deps ./ffi-python
cd /tmp  # import the installed rffi, not the checkout's sources
"$VENV/bin/python" "$OLDPWD/ffi-python/benches/bench_session.py" "$@"
