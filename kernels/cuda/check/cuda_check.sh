#!/usr/bin/env bash
# Offline compile check of the CUDA kernels, with no GPU and no CUDA toolkit: every module the
# backend compiles at run time (each dtype and family, the source exactly as source.rs assembles
# it, written by `cargo run --example cuda_sources`) goes through clang's CUDA device compiler to
# PTX for each architecture in ARCHS, with shim.h standing in for what NVRTC declares by itself.
# sm_75 checks the paths taken before sm_80 (bfloat16 by bit arithmetic, copies without cp.async)
# that no H200 run compiles; sm_80 and sm_90 the others. Warnings are errors. Kernels whose PTX
# keeps a local-memory frame (an array clang could not hold in registers) are listed; every
# kernel name a planner can choose (`MODULE.names`) must be an entry of the module's PTX.
#
#   cuda_check.sh               every module (make cuda-check)
#   cuda_check.sh FILE.cu ...   the given sources (already assembled modules)
#   cuda_check.sh --self-test   broken modules must be reported as errors
#
# clang: $CLANG, else the newest clang-NN on PATH that knows sm_90; installed with apt-get
# (clang-19, Debian bookworm) when none is found and apt-get can.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
HERE="$ROOT/kernels/cuda/check"
OUT="${CUDA_CHECK_OUT:-$ROOT/target/cuda-check}"
ARCHS="${ARCHS:-sm_75 sm_80 sm_90}"
JOBS="${JOBS:-$(nproc)}"

knows_sm90() {
    echo '__attribute__((global)) void k() {}' |
        "$1" -x cuda --cuda-device-only -nocudainc -nocudalib --cuda-gpu-arch=sm_90 \
            -Xclang -target-feature -Xclang +ptx80 -S -o /dev/null - 2>/dev/null
}

find_clang() {
    if [ -n "${CLANG:-}" ]; then echo "$CLANG"; return; fi
    local v
    for v in 21 20 19 18 17 16; do
        if command -v "clang-$v" >/dev/null && knows_sm90 "clang-$v"; then echo "clang-$v"; return; fi
    done
    if command -v clang >/dev/null && knows_sm90 clang; then echo clang; return; fi
    if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
        echo "(installing clang-19 with apt-get)" >&2
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
            apt-get install -y -qq --no-install-recommends clang-19) >/dev/null 2>&1 || true
        if command -v clang-19 >/dev/null && knows_sm90 clang-19; then echo clang-19; return; fi
    fi
    echo "cuda-check: no clang that compiles CUDA for sm_90 (apt-get install clang-19)" >&2
    exit 1
}

# One module for one architecture: PTX next to the sources; the log (errors) on stderr.
compile_one() {
    local src="$1" arch="$2" ptx
    ptx="$OUT/ptx/$(basename "$src" .cu).$arch.ptx"
    "$CC_CUDA" -x cuda --cuda-device-only -nocudainc -nocudalib --cuda-gpu-arch="$arch" \
        -Xclang -target-feature -Xclang +ptx80 -std=c++17 -O3 -fno-builtin \
        -Wall -Wextra -Wno-unused-parameter -Werror \
        -include "$HERE/shim.h" -S -o "$ptx" "$src"
}

# Every (file, arch) pair, JOBS at a time; prints each failure's log, returns the failures' count.
check_files() {
    rm -rf "$OUT/logs"
    mkdir -p "$OUT/ptx" "$OUT/logs"
    local jobs=() f a
    for f in "$@"; do for a in $ARCHS; do jobs+=("$f" "$a"); done; done
    export CC_CUDA HERE OUT
    export -f compile_one
    printf '%s\0%s\0' "${jobs[@]}" | xargs -0 -n 2 -P "$JOBS" bash -c '
        log="$OUT/logs/$(basename "$0" .cu).$1.log"
        if compile_one "$0" "$1" >"$log" 2>&1; then rm -f "$log"; else echo "FAIL $0 ($1)"; fi
    ' >"$OUT/failed.txt" || true
    local n
    n=$(wc -l <"$OUT/failed.txt")
    if [ "$n" -gt 0 ]; then
        cat "$OUT/failed.txt" >&2
        cat "$OUT"/logs/*.log >&2
    fi
    return "$n"
}

# Kernels (.entry) whose PTX has a local-memory frame (__local_depot).
local_frames() {
    local ptx
    for ptx in "$OUT"/ptx/*.ptx; do
        awk -v f="$(basename "$ptx")" '/^\.visible \.entry/ { k = $3; sub(/\(.*/, "", k) }
            /__local_depot/ && k != "" && !seen[k]++ { print "  " f ": " k }' "$ptx"
    done
}

# Kernels a planner can choose (`MODULE.names`, written beside MODULE.cu by cuda_sources) that
# are not an entry of the module's PTX for the last architecture checked; prints them.
missing_entries() {
    local src names ptx arch
    arch="${ARCHS##* }"
    for src in "$@"; do
        names="${src%.cu}.names"
        ptx="$OUT/ptx/$(basename "$src" .cu).$arch.ptx"
        [ -f "$names" ] || continue
        awk -v f="$(basename "$ptx")" 'FNR == NR { if ($1 == ".entry") { k = $2 } else if ($2 == ".entry") { k = $3 } else { next }
                sub(/\(.*/, "", k); have[k] = 1; next }
            NF && !($1 in have) { print "  " f ": " $1 }' "$ptx" "$names"
    done
}

# A module with one deliberate error: a type error, a syntax error, a call that exists on no
# architecture before sm_80's path, and a struct unlike the host's; each must fail the check
# with the compiler's message.
self_test() {
    local dir="$OUT/self-test" base="$1" name want
    rm -rf "$dir"
    mkdir -p "$dir"
    printf '%s\n%s\n' "$(cat "$base")" \
        'extern "C" __global__ void broken_type(u64 p) { Pack q = ((const Pack*)p)[0]; T* t = q; t[0] = 0; }' \
        >"$dir/type.cu"
    printf '%s\n%s\n' "$(cat "$base")" \
        'extern "C" __global__ void broken_syntax(u64 p) { int a = 1 int b = 2; ((int*)p)[0] = a + b; }' >"$dir/syntax.cu"
    printf '%s\n%s\n' "$(cat "$base")" \
        'extern "C" __global__ void broken_old(u64 p) {
#if __CUDA_ARCH__ < 800
  ((T*)p)[0] = st(undeclared_before_sm80(1.0f));
#endif
}' >"$dir/old_arch.cu"
    # A kernel struct with a last field the host's side lacks: the layout assertions fail it.
    sed 's/ int tiled; };/ int tiled; int not_on_the_host; };/' "$base" >"$dir/layout.cu"
    for name in type syntax old_arch layout; do
        case $name in
            type) want="no viable conversion|cannot initialize" ;;
            syntax) want="expected ';'" ;;
            old_arch) want="use of undeclared identifier 'undeclared_before_sm80'" ;;
            layout) want="struct Lay32: not the host's layout" ;;
        esac
        if check_files "$dir/$name.cu" 2>"$dir/$name.err"; then
            echo "cuda-check self-test: the broken module '$name' was not reported" >&2
            exit 1
        fi
        if ! grep -Eq "$want" "$dir/$name.err"; then
            echo "cuda-check self-test: '$name' failed without the expected error ($want):" >&2
            cat "$dir/$name.err" >&2
            exit 1
        fi
        if [ "$name" = old_arch ] && { ! grep -q "(sm_75)" "$dir/$name.err" || grep -q "(sm_90)" "$dir/$name.err"; }; then
            echo "cuda-check self-test: the pre-sm_80 error must fail sm_75 only:" >&2
            cat "$dir/$name.err" >&2
            exit 1
        fi
        echo "self-test: broken module '$name' reported: $(grep -m1 -E 'error:' "$dir/$name.err")"
    done
    # A planned kernel the module lacks is reported (and one it has is not).
    cp "$base" "$dir/names.cu"
    printf 'rms_norm_rows\nno_such_kernel\n' >"$dir/names.names"
    check_files "$dir/names.cu"
    if [ "$(missing_entries "$dir/names.cu")" != "  names.${ARCHS##* }.ptx: no_such_kernel" ]; then
        echo "cuda-check self-test: a planned kernel missing from the PTX was not reported alone:" >&2
        missing_entries "$dir/names.cu" >&2
        exit 1
    fi
    echo "self-test: a planned kernel missing from its module reported: no_such_kernel"
    # The unbroken base passes.
    check_files "$base"
    rm -rf "$OUT/logs"
}

CC_CUDA="$(find_clang)"
echo "cuda-check: $("$CC_CUDA" --version | head -1), archs: $ARCHS"
start=$SECONDS
if [ "${1:-}" = "--self-test" ]; then
    mkdir -p "$OUT/src"
    base="$OUT/src/rffi_kernels_bf16_norm.cu"
    (cd "$ROOT" && cargo run -q -p rffi-kernels-cuda --example cuda_sources -- "$OUT/src")
    ARCHS="sm_75 sm_90" self_test "$base"
    echo "cuda-check self-test passed in $((SECONDS - start)) s"
    exit 0
fi
if [ $# -gt 0 ]; then
    files=("$@")
else
    rm -rf "$OUT/src" "$OUT/ptx" "$OUT/logs"
    (cd "$ROOT" && cargo run -q -p rffi-kernels-cuda --example cuda_sources -- "$OUT/src")
    files=("$OUT"/src/*.cu)
fi
if ! check_files "${files[@]}"; then
    echo "cuda-check: $(wc -l <"$OUT/failed.txt") of $((${#files[@]} * $(wc -w <<<"$ARCHS"))) compiles failed (logs in $OUT/logs)" >&2
    exit 1
fi
echo "cuda-check: ${#files[@]} modules x {$ARCHS} compiled to PTX in $((SECONDS - start)) s (PTX in $OUT/ptx)"
missing="$(missing_entries "${files[@]}")"
if [ -n "$missing" ]; then
    echo "cuda-check: kernels the planners can choose that the modules do not define:" >&2
    echo "$missing" >&2
    exit 1
fi
echo "cuda-check: every kernel the planners can choose is an entry of its module's PTX ($(cat "$OUT"/src/*.names 2>/dev/null | wc -l) names)"
frames="$(local_frames)"
if [ -n "$frames" ]; then
    echo "kernels with a local-memory frame in clang's PTX (an array not held in registers):"
    echo "$frames"
fi
