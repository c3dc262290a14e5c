#!/usr/bin/env bash
# Runs rffi's fuzz targets (all of them, or those named): each is fuzzed without a sanitizer for
# throughput (libFuzzer's coverage guidance, overflow checks and the harness's own checks stay
# on), then its whole corpus and saved regressions run again under AddressSanitizer.
#   FUZZ_SECONDS=60   how long each target is fuzzed (default 60)
#   FUZZ_RUNS=N       fuzz each target for N executions instead
# Corpora grow in fuzz/corpus/<target>/ (not committed), failing inputs land in
# fuzz/artifacts/<target>/, full logs in fuzz/target/logs/. Needs fuzz/setup.sh run once.
set -uo pipefail
cd "$(dirname "$0")/.."
if [ -n "${FUZZ_RUNS:-}" ]; then
    limit="-runs=$FUZZ_RUNS"
else
    limit="-max_total_time=${FUZZ_SECONDS:-60}"
fi
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(dtype_device dlpack_import any_args callback_results containers session_frames json_graph)
fi
# Errors are made by the million: no native backtrace for each.
export RFFI_BACKTRACE=0 RUST_BACKTRACE=0
fuzz=(cargo +"${RFFI_NIGHTLY:-nightly}" fuzz run)
mkdir -p fuzz/target/logs
failed=()
for t in "${targets[@]}"; do
    mkdir -p "fuzz/corpus/$t"
    log="fuzz/target/logs/$t.log"
    echo "== $t: fuzzing ($limit, no sanitizer)"
    start=$(date +%s)
    if ! "${fuzz[@]}" -s none --target-dir fuzz/target/none "$t" "fuzz/corpus/$t" "fuzz/seeds/$t" \
        -- "$limit" -print_final_stats=1 >"$log" 2>&1; then
        failed+=("$t")
        grep -E "panicked|ERROR|SUMMARY|Test unit written" -A2 "$log" | head -20
    fi
    grep -E "^stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)" "$log"
    echo "seconds: $(($(date +%s) - start)); corpus: $(find "fuzz/corpus/$t" -type f | wc -l) inputs"
    echo "== $t: corpus and regressions under AddressSanitizer"
    extra=()
    [ -d "fuzz/regressions/$t" ] && extra+=("fuzz/regressions/$t")
    if ! "${fuzz[@]}" --target-dir fuzz/target/asan "$t" "fuzz/corpus/$t" "${extra[@]}" -- -runs=0 \
        >"$log.asan" 2>&1; then
        failed+=("$t (asan)")
        grep -E "panicked|ERROR|SUMMARY|Test unit written" -A2 "$log.asan" | head -20
    fi
    grep -E "^Done|INITED" "$log.asan" | tail -1
done
if [ ${#failed[@]} -ne 0 ]; then
    echo "fuzz: FAILED: ${failed[*]} (inputs in fuzz/artifacts/)"
    exit 1
fi
echo "fuzz: ${#targets[@]} targets, no findings"
