#!/usr/bin/env bash
# Runs the Python suite against a fresh `pip install ./ffi-python` in target/py-venv, plus ruff.
# Usage: ffi-python/scripts/test.sh [pytest arguments]
source "$(dirname "$0")/_env.sh" pytest numpy ruff
echo "== ruff check =="
"$VENV/bin/ruff" check --config ffi-python/pyproject.toml ffi-python examples/python
echo "== pytest =="
# Run from the repository root: ffi-python/ is not on sys.path, so `import rffi` is the install.
"$PY" -m pytest -q ffi-python/tests "$@"
