#!/usr/bin/env bash
# Runs the Python examples in examples/python against a fresh `pip install ./ffi-python`.
source "$(dirname "$0")/_env.sh" numpy
for example in examples/python/*.py; do
  echo "== python $example =="
  "$PY" "$example"
done
