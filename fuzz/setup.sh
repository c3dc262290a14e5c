#!/usr/bin/env bash
# Installs what `make fuzz` and `make sanitize` need beyond the stable toolchain: the nightly
# toolchain with rust-src (libFuzzer's sanitizer flags and -Zbuild-std are nightly-only),
# cargo-fuzz, and valgrind. Safe to run again: each step is skipped when already done.
set -euo pipefail
NIGHTLY=${RFFI_NIGHTLY:-nightly}
if ! rustup run "$NIGHTLY" rustc --version >/dev/null 2>&1; then
    rustup toolchain install "$NIGHTLY" --profile minimal --component rust-src
elif ! rustup component list --toolchain "$NIGHTLY" --installed | grep -q '^rust-src'; then
    rustup component add rust-src --toolchain "$NIGHTLY"
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi
if ! command -v valgrind >/dev/null; then
    if command -v apt-get >/dev/null; then
        apt-get update -qq && apt-get install -y -qq valgrind
    else
        echo "valgrind not found: install it with your package manager" >&2
        exit 1
    fi
fi
