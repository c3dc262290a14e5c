// A tiny assertion harness for the C++ tests: counts checks, prints failures with their line, and
// ends with the "N passed, N failed" line the runner reads.
#ifndef RFFI_TEST_CHECK_HPP_
#define RFFI_TEST_CHECK_HPP_
#include <cstdio>
#include <string>

inline int g_passed = 0;
inline int g_failed = 0;

#define CHECK(cond)                                                                  \
  do {                                                                               \
    if (cond) {                                                                      \
      ++g_passed;                                                                    \
    } else {                                                                         \
      ++g_failed;                                                                    \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                                \
  } while (0)

inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// Runs `body`, which must throw rffi::Error of `kind` whose message contains `needle`; returns
// the error for further checks.
template <typename F>
rffi::Error expect_error(const char* kind, const std::string& needle, F body, int line) {
  try {
    body();
  } catch (const rffi::Error& e) {
    bool ok = e.kind() == kind && contains(e.message(), needle);
    if (ok) {
      ++g_passed;
    } else {
      ++g_failed;
      std::fprintf(stderr, "line %d: expected %s containing \"%s\", got %s\n", line, kind,
                   needle.c_str(), e.what());
    }
    return e;
  }
  ++g_failed;
  std::fprintf(stderr, "line %d: expected %s, nothing was thrown\n", line, kind);
  return rffi::Error("RuntimeError", "nothing was thrown");
}
#define EXPECT_ERROR(kind, needle, ...) expect_error(kind, needle, [&] { __VA_ARGS__; }, __LINE__)

inline int report(const char* name) {
  std::printf("%s: %d passed, %d failed\n", name, g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}

#endif  // RFFI_TEST_CHECK_HPP_
