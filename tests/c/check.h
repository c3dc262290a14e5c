/* A tiny assertion harness for the C tests: counts checks, prints failures with their line, and
 * ends with the "N passed, N failed" line the test runners read. */
#ifndef RFFI_TEST_CHECK_H_
#define RFFI_TEST_CHECK_H_
#include <stdio.h>
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

static int finish(const char* name) {
  printf("%s: %d passed, %d failed\n", name, g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
#endif
