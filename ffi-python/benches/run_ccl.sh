#!/usr/bin/env bash
# Allreduce benchmark on CPU: rffi's shared-memory collectives through a ProcessSession (this
# checkout, installed with pip) against torch.distributed on gloo, in one run, each measurement
# in processes of its own. Uses the session benchmark's venv and adds torch (from PyPI) to it.
# Usage: ffi-python/benches/run_ccl.sh [--workers 2 4] [--max-mib 256]
set -euo pipefail
cd "$(dirname "$0")/../.."
VENV="$(realpath -m "${RFFI_SESSION_BENCH_VENV:-.venv-session-bench}")"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/python" -c "import torch.distributed, numpy" 2>/dev/null ||
  "$VENV/bin/pip" install -q --disable-pip-version-check torch numpy
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
"$VENV/bin/pip" install -q --disable-pip-version-check --force-reinstall --no-deps ./ffi-python
cd /tmp  # import the installed rffi, not the checkout's sources
"$VENV/bin/python" "$OLDPWD/ffi-python/benches/bench_ccl.py" "$@"
