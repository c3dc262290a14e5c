#!/usr/bin/env bash
# Runs the Python suite against a fresh `pip install ./ffi-python` in target/py-venv, on both call
# paths (native fast path and ctypes), plus ruff, and checks the type stubs (typecheck.sh).
# Usage: ffi-python/scripts/test.sh [pytest arguments]
# ray: the optional extra `rffi[ray]` (RaySession), so its tests (test_ray_session.py) run here.
# mypy: the stub checks (typecheck.sh).
source "$(dirname "$0")/_env.sh" pytest numpy ruff safetensors "ray>=2.9" mypy
echo "== ruff check =="
"$VENV/bin/ruff" check --config ffi-python/pyproject.toml ffi-python examples/python fuzz/python_probe.py
# Run from the repository root: ffi-python/ is not on sys.path, so `import rffi` is the install.
# Twice: the native fast path (where the interpreter allows it), then the ctypes path alone.
echo "== pytest (default call path: $("$PY" -c 'import rffi._core as c; print("native fast path" if c.FASTPATH else "ctypes: " + c.FASTPATH_REASON)')) =="
"$PY" -m pytest -q ffi-python/tests "$@"
echo "== pytest (ctypes path: RFFI_PYTHON_FASTPATH=0) =="
RFFI_PYTHON_FASTPATH=0 "$PY" -m pytest -q ffi-python/tests "$@"
echo "== type stubs: mypy --strict on a user program, stubtest =="
ffi-python/scripts/typecheck.sh "$PY"
