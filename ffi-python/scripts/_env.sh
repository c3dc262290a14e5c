# Shared by test.sh and demo.sh (sourced): a virtualenv in target/py-venv (reused when present)
# with the rffi package freshly installed from ffi-python/ by pip, and the example plugins built.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
VENV="${RFFI_PY_VENV:-$ROOT/target/py-venv}"
PY="$VENV/bin/python"
# One cargo cache for `make`, `cargo build --release` and the pip build.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
# The installed package must be what runs, not a library pointed at by hand.
unset RFFI_LIBRARY_PATH

command -v python3 >/dev/null || { echo "python3 not found: apt-get install python3 python3-venv" >&2; exit 1; }
if [ ! -x "$PY" ]; then
  if ! python3 -m venv --help >/dev/null 2>&1 || ! python3 -c "import ensurepip" 2>/dev/null; then
    echo "python3 -m venv is unavailable; installing python3-venv with apt-get (Debian/Ubuntu)" >&2
    if command -v apt-get >/dev/null; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
    else
      echo "install the Python venv module for python3, then re-run" >&2
      exit 1
    fi
  fi
  python3 -m venv "$VENV"
fi

# Tools first (no-ops when present), then the package itself, always reinstalled so the tests see
# the current sources and a freshly built library.
"$PY" -m pip install -q --disable-pip-version-check "$@"
echo "== pip install ./ffi-python =="
"$PY" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps ./ffi-python

# The example plugins that load_module loads.
cargo build --release -q -p rffi-example-rust-plugin
PLUGIN_DIR="$CARGO_TARGET_DIR/py-plugins"
mkdir -p "$PLUGIN_DIR"
${CC:-cc} -std=c99 -Wall -Wextra -O2 -shared -fPIC -Iinclude examples/c-plugin/plugin.c \
  -o "$PLUGIN_DIR/libc_plugin.so"
export RFFI_EXAMPLE_RUST_PLUGIN="$CARGO_TARGET_DIR/release/librffi_example_rust_plugin.so"
export RFFI_EXAMPLE_C_PLUGIN="$PLUGIN_DIR/libc_plugin.so"
