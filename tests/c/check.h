/* A tiny assertion harness for the C tests: counts checks, prints failures with their line, and
 * ends with the "N passed, N failed" line the test runners read; plus helpers for calling the
 * runtime. Include after rffi/c_api.h. */
#ifndef RFFI_TEST_CHECK_H_
#define RFFI_TEST_CHECK_H_
#include <stdio.h>
#include <stdint.h>
#include <string.h>

static int g_passed = 0;
static int g_failed = 0;

#define CHECK(cond)                                                          \
  do {                                                                       \
    if (cond) {                                                              \
      ++g_passed;                                                            \
    } else {                                                                 \
      ++g_failed;                                                            \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                        \
  } while (0)

/* Does the byte array `ba` contain the C string `needle`? */
static int ba_contains(RFFIByteArray ba, const char* needle) {
  size_t n = strlen(needle);
  size_t i;
  if (n > ba.size) return 0;
  for (i = 0; i + n <= ba.size; ++i) {
    if (memcmp(ba.data + i, needle, n) == 0) return 1;
  }
  return 0;
}

static int ba_equals(RFFIByteArray ba, const char* s) {
  return ba.size == strlen(s) && memcmp(ba.data, s, ba.size) == 0;
}

static RFFIByteArray ba_of(const char* s) {
  RFFIByteArray ba;
  ba.data = s;
  ba.size = strlen(s);
  return ba;
}

/* ---- Runtime helpers shared by the C tests (static inline: unused ones raise no warning) ---- */

/* Looks up a global function (NULL if absent). */
static inline RFFIObjectHandle get_global(const char* name) {
  RFFIByteArray ba = ba_of(name);
  RFFIObjectHandle f = NULL;
  CHECK(RFFIFunctionGetGlobal(&ba, &f) == 0);
  return f;
}

/* Takes the raised error, checks its kind and that its message contains `needle`, and returns it
 * (the caller releases it). */
static inline RFFIObjectHandle take_error(const char* kind, const char* needle) {
  RFFIObjectHandle err = NULL;
  RFFIByteArray k, m;
  RFFIErrorMoveFromRaised(&err);
  CHECK(err != NULL);
  if (err == NULL) return NULL;
  CHECK(RFFIErrorGetKind(err, &k) == 0 && ba_equals(k, kind));
  CHECK(RFFIErrorGetMessage(err, &m) == 0 && ba_contains(m, needle));
  if (!ba_equals(k, kind) || !ba_contains(m, needle)) {
    fprintf(stderr, "  got %.*s: %.*s\n", (int)k.size, k.data, (int)m.size, m.data);
  }
  return err;
}

/* take_error, then release the error. */
static inline void expect_error(const char* kind, const char* needle) {
  RFFIObjectHandle err = take_error(kind, needle);
  if (err != NULL) CHECK(RFFIObjectDecRef(err) == 0);
}

static inline RFFIAny int_any(int64_t x) {
  RFFIAny a;
  memset(&a, 0, sizeof(a));
  a.type_index = kRFFIInt;
  a.v.v_int64 = x;
  return a;
}

/* A borrowed C string argument (kRFFIRawStr). */
static inline RFFIAny str_arg(const char* s) {
  RFFIAny a;
  memset(&a, 0, sizeof(a));
  a.type_index = kRFFIRawStr;
  a.v.v_c_str = s;
  return a;
}

/* An object handle as a (borrowed) argument value. */
static inline RFFIAny object_arg(RFFIObjectHandle h) {
  RFFIAny a;
  memset(&a, 0, sizeof(a));
  a.type_index = ((RFFIObject*)h)->type_index;
  a.v.v_obj = (RFFIObject*)h;
  return a;
}

static int finish(const char* name) {
  printf("%s: %d passed, %d failed\n", name, g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
#endif
