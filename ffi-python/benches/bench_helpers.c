/* Plain C functions for the ctypes baselines, and the same work as safe-call symbols that rffi
 * (__rffi_add3) and tvm-ffi (__tvm_ffi_add3) load as library modules. Needs no runtime. */
#include <stdint.h>
#include <string.h>
#include "rffi/c_api.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT const RFFIVersion rffi_plugin_version = {RFFI_VERSION_MAJOR, RFFI_VERSION_MINOR,
                                            RFFI_VERSION_PATCH};

EXPORT void noop(void) {}
EXPORT int64_t add_one(int64_t x) { return x + 1; }
EXPORT int64_t add3(int64_t a, int64_t b, int64_t c) { return a + b + c; }
EXPORT int64_t take_ptr(const void* p) { return p != NULL; }
EXPORT size_t take_str(const char* s) { return strlen(s); }
EXPORT int64_t call_cb(int64_t (*cb)(int64_t), int64_t x) { return cb(x); }
EXPORT int32_t fail(void) { return -1; }

static int add3_safe(void* self, const RFFIAny* args, int32_t n, RFFIAny* result) {
  (void)self;
  if (n != 3) return -1;
  result->type_index = kRFFIInt;
  result->v.v_int64 = args[0].v.v_int64 + args[1].v.v_int64 + args[2].v.v_int64;
  return 0;
}

/* The safe-call ABI is the same in both runtimes. */
EXPORT int __rffi_add3(void* s, const RFFIAny* a, int32_t n, RFFIAny* r) {
  return add3_safe(s, a, n, r);
}
EXPORT int __tvm_ffi_add3(void* s, const RFFIAny* a, int32_t n, RFFIAny* r) {
  return add3_safe(s, a, n, r);
}

/* Instruction counts (bench_counts.py): a measured region under callgrind, started with zeroed
 * counters and dumped under a label. Outside valgrind (or without its header) they do nothing. */
#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define RFFI_BENCH_CALLGRIND 1
#endif
#endif

EXPORT int count_available(void) {
#ifdef RFFI_BENCH_CALLGRIND
  return RUNNING_ON_VALGRIND != 0;
#else
  return 0;
#endif
}

EXPORT void count_start(void) {
#ifdef RFFI_BENCH_CALLGRIND
  CALLGRIND_ZERO_STATS;
  CALLGRIND_START_INSTRUMENTATION;
#endif
}

EXPORT void count_stop(const char* label) {
#ifdef RFFI_BENCH_CALLGRIND
  CALLGRIND_STOP_INSTRUMENTATION;
  CALLGRIND_DUMP_STATS_AT(label);
#else
  (void)label;
#endif
}
