#!/usr/bin/env bash
# Hostile use of a fresh `pip install ./ffi-python` (fuzz/python_probe.py: released and
# uninitialised wrappers, every public callable and method with hostile arguments, each use in a
# forked child), on both call paths. Usage: ffi-python/scripts/probe.sh [part ...] [--seed N]
source "$(dirname "$0")/_env.sh" numpy safetensors
export RFFI_PROBE_PLUGIN="$RFFI_EXAMPLE_RUST_PLUGIN"
# The kernels part: the plugin and its Python module.
cargo build --release -q -p rffi-kernels-plugin
export RFFI_KERNELS_PLUGIN="$CARGO_TARGET_DIR/release/librffi_kernels_plugin.so"
export PYTHONPATH="$ROOT/kernels/python${PYTHONPATH:+:$PYTHONPATH}"
echo "== python_probe (default call path) =="
"$PY" fuzz/python_probe.py "$@"
echo "== python_probe (ctypes path: RFFI_PYTHON_FASTPATH=0) =="
RFFI_PYTHON_FASTPATH=0 "$PY" fuzz/python_probe.py "$@"
