# rffi: the two set-up commands are `make demo` and `make test` (see README.md).
CARGO ?= cargo
CC ?= cc
TARGET_DIR := $(CURDIR)/target
LIB_DEBUG := $(TARGET_DIR)/debug
LIB_RELEASE := $(TARGET_DIR)/release
BUILD := $(TARGET_DIR)/examples-c

.PHONY: all demo test check-tools fmt-check clippy rust-test cpp-test install install-test publish-check python-test python-demo kernels-test cuda-check bench header clean \
	fuzz fuzz-setup sanitize sanitize-valgrind sanitize-asan sanitize-tsan probe-python

all: demo

## Tools a fresh machine of this project's kind has; fail early with a clear message otherwise.
check-tools:
	@command -v $(CARGO) >/dev/null || { echo "cargo not found: install Rust (rustup)"; exit 1; }
	@command -v $(CC) >/dev/null || { echo "C compiler not found: apt-get install build-essential"; exit 1; }
	@command -v c++ >/dev/null || { echo "C++ compiler not found: apt-get install g++"; exit 1; }
	@$(CARGO) fmt --version >/dev/null 2>&1 || rustup component add rustfmt
	@$(CARGO) clippy --version >/dev/null 2>&1 || rustup component add clippy

## Build and run every example.
RUST_PLUGIN := $(LIB_RELEASE)/librffi_example_rust_plugin.so
C_PLUGIN := $(BUILD)/libc_plugin.so
CPP_PLUGIN := $(BUILD)/libcpp_plugin.so

demo: check-tools python-demo
	$(CARGO) build --release -p rffi-c -p rffi-example-rust-host -p rffi-example-rust-plugin
	@mkdir -p $(BUILD)
	$(CC) -std=c99 -Wall -Wextra -O2 -shared -fPIC -Iinclude examples/c-plugin/plugin.c -o $(C_PLUGIN)
	$(CC) -std=c99 -Wall -Wextra -O2 -Iinclude examples/c-host/main.c -o $(BUILD)/c-host \
	    -L$(LIB_RELEASE) -lrffi -Wl,-rpath,$(LIB_RELEASE)
	@echo "== C host =="
	$(BUILD)/c-host $(RUST_PLUGIN) $(C_PLUGIN)
	@echo "== Rust host =="
	$(TARGET_DIR)/release/rffi-example-rust-host $(RUST_PLUGIN) $(C_PLUGIN)
	c++ -std=c++17 -Wall -Wextra -O2 -shared -fPIC -Iinclude examples/cpp-plugin/plugin.cc -o $(CPP_PLUGIN)
	c++ -std=c++17 -Wall -Wextra -O2 -Iinclude examples/cpp-host/main.cc -o $(BUILD)/cpp-host \
	    -L$(LIB_RELEASE) -lrffi -Wl,-rpath,$(LIB_RELEASE)
	@echo "== C++ host =="
	$(BUILD)/cpp-host $(CPP_PLUGIN) $(RUST_PLUGIN)

## Every test: formatting, lints, Rust tests, C programs against the header, header drift.
test: check-tools fmt-check clippy rust-test cpp-test python-test install-test kernels-test cuda-check

fmt-check:
	$(CARGO) fmt --all --check

clippy:
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(CARGO) clippy -p rffi-core --features dlpack --all-targets -- -D warnings

rust-test:
	$(CARGO) build --workspace
	$(CARGO) test --workspace
	$(CARGO) test -p rffi-core --features dlpack --lib dlpack_crate

## The C++ API (include/rffi/rffi.hpp): host and plugin tests and the C++ examples, under valgrind.
cpp-test: check-tools
	$(CARGO) build --release -p rffi-c -p rffi-example-rust-plugin
	tests/cpp/run.sh

## Install the library, the C/C++ headers, rffi.pc and the CMake package (find_package(rffi))
## under PREFIX (default /usr/local; DESTDIR stages it).
PREFIX ?= /usr/local
install:
	$(CARGO) build --release -p rffi-c
	python3 packaging/install_files.py --prefix "$(PREFIX)" --destdir "$(DESTDIR)" --lib $(LIB_RELEASE)/librffi.so

## CMake and pkg-config projects built against `make install` and against the installed wheel;
## the wheel itself (auditwheel, contents, the README's Python tour from an empty folder).
install-test: python-test
	tests/install/run.sh
	tests/install/wheel.sh

## `cargo publish --dry-run` of every publishable crate (packaged and built alone; needs the
## crates.io index). Internal crates say why in their Cargo.toml (`publish = false`). Cargo unpacks
## each packaged crate, to verify the crates that depend on it, under
## $CARGO_HOME/registry/src/-<hash>/ (a local registry's folder) and builds it as a registry
## crate, which it never rebuilds for the same version: a copy or a build an earlier run left
## would hide changed sources. So the copies go first, and the check builds in its own target
## folder, made afresh.
CARGO_HOME_DIR := $(or $(CARGO_HOME),$(HOME)/.cargo)
PUBLISH_TARGET := $(TARGET_DIR)/publish-check
publish-check:
	rm -rf $(CARGO_HOME_DIR)/registry/src/-*/rffi-* $(PUBLISH_TARGET)
	CARGO_TARGET_DIR=$(PUBLISH_TARGET) $(CARGO) publish --dry-run --allow-dirty --workspace

## The Python package: a fresh `pip install ./ffi-python` in target/py-venv, then ruff and pytest.
python-test: check-tools
	ffi-python/scripts/test.sh

## The kernels from Python (CPU), through the plugin, in the venv python-test made; NVRTC (a pip
## package) checks that the CUDA kernels compile, without a GPU.
kernels-test: python-test
	$(TARGET_DIR)/py-venv/bin/python -m pip install -q nvidia-cuda-nvrtc-cu12
	$(CARGO) build --release -p rffi-kernels-plugin
	$(TARGET_DIR)/py-venv/bin/ruff check --config ffi-python/pyproject.toml kernels/python kernels/tests kernels/benches bench/gpu \
	    kernels/cuda/check
	RFFI_KERNELS_PLUGIN=$(LIB_RELEASE)/librffi_kernels_plugin.so PYTHONPATH=kernels/python \
	    $(TARGET_DIR)/py-venv/bin/python -m pytest -q -p no:cacheprovider kernels/tests/python

## Every CUDA module (each dtype and family, as the backend assembles it) compiled to PTX by
## clang for sm_75, sm_80 and sm_90 without a GPU or CUDA toolkit (clang-19 installed with apt-get
## when missing); first a self-test that broken modules are reported. See kernels/README.md.
cuda-check: check-tools
	kernels/cuda/check/cuda_check.sh --self-test
	kernels/cuda/check/cuda_check.sh

## The Python examples in examples/python, against a fresh install of the package.
python-demo: check-tools
	ffi-python/scripts/demo.sh

## Long runs, kept out of `make test` (which replays every saved fuzz input and regression test);
## their figures are in docs/RELIABILITY.md. Both need the nightly toolchain: fuzz/setup.sh.
fuzz-setup:
	fuzz/setup.sh

## Each fuzz target for FUZZ_SECONDS (or FUZZ_RUNS executions), then its corpus under
## AddressSanitizer. FUZZ_TARGETS picks targets (default: all seven).
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?=
fuzz: fuzz-setup
	FUZZ_SECONDS=$(FUZZ_SECONDS) fuzz/run.sh $(FUZZ_TARGETS)

## Hostile use of the Python package, each use in a forked child, on both call paths
## (fuzz/python_probe.py; any crash or hang fails). Minutes; not part of `make test`.
probe-python: check-tools
	ffi-python/scripts/probe.sh

## The C tests under valgrind memcheck (any error or definite leak fails), and the Rust tests
## (plugins included) under AddressSanitizer with leak detection.
VALGRIND := valgrind --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite
SANITIZE_TARGET := x86_64-unknown-linux-gnu
# --export-dynamic: the test executables carry the ASan runtime, and the ASan-built plugins they
# load (dlopen) resolve its __asan_* symbols from them; without it they fail to load.
# libstdc++ preloaded: ASan intercepts `__cxa_throw` only if it is there when the process starts,
# and the Rust test executables do not link it; the C++ plugin a test loads later throws through
# it ("CHECK failed: ... real___cxa_throw != 0" otherwise).
ASAN_ENV := RUSTFLAGS="-Zsanitizer=address -Clink-arg=-Wl,--export-dynamic" \
	RUSTDOCFLAGS="-Zsanitizer=address" \
	CARGO_BUILD_TARGET=$(SANITIZE_TARGET) CARGO_UNSTABLE_BUILD_STD=std,panic_unwind \
	ASAN_OPTIONS=detect_leaks=1 RFFI_BACKTRACE=0 \
	LD_PRELOAD=$(shell $(CXX) -print-file-name=libstdc++.so)
# ThreadSanitizer: `rffi_tsan` swaps the object release's fence for an Acquire load, which it sees.
TSAN_ENV := RUSTFLAGS="-Zsanitizer=thread --cfg rffi_tsan -Clink-arg=-Wl,--export-dynamic" \
	RUSTDOCFLAGS="-Zsanitizer=thread" \
	CARGO_BUILD_TARGET=$(SANITIZE_TARGET) CARGO_UNSTABLE_BUILD_STD=std,panic_unwind \
	TSAN_OPTIONS=halt_on_error=1 RFFI_BACKTRACE=0
sanitize: sanitize-valgrind sanitize-asan sanitize-tsan

sanitize-valgrind: fuzz-setup
	$(CARGO) build -p rffi-c
	RFFI_TEST_RUNNER="$(VALGRIND)" $(CARGO) test -p rffi-c --test c_programs -- --nocapture

sanitize-asan: fuzz-setup
	$(ASAN_ENV) $(CARGO) +nightly test --target-dir $(TARGET_DIR)/asan --workspace --exclude rffi-c
	$(ASAN_ENV) $(CARGO) +nightly test --target-dir $(TARGET_DIR)/asan -p rffi-c --lib --test header

## The Rust tests (plugins, worker processes and threads included) under ThreadSanitizer: any
## data race it reports fails the run.
sanitize-tsan: fuzz-setup
	$(TSAN_ENV) $(CARGO) +nightly test --target-dir $(TARGET_DIR)/tsan --workspace --exclude rffi-c
	$(TSAN_ENV) $(CARGO) +nightly test --target-dir $(TARGET_DIR)/tsan -p rffi-c --lib --test header

## Regenerate include/rffi/c_api.h after changing the C API.
header:
	UPDATE_HEADERS=1 $(CARGO) test -p rffi-c --test header

## C-ABI call, lookup and error benchmarks side by side with tvm-ffi (see docs/BENCHMARKS.md).
bench:
	bench/run.sh

clean:
	$(CARGO) clean
