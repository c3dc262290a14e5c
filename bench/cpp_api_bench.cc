// The C++ API's cost per call over the C ABI it wraps: the same calls made through
// RFFIFunctionCall by hand and through rffi::Function (typed arguments, Any result, cast).
// Prints a table (ns per call, best of 5 runs, in thread CPU time so that a loaded machine's
// preemptions do not count). Usage: bench/cpp_api_bench.sh
#include <rffi/rffi.hpp>

#include <time.h>

#include <cstdio>
#include <cstring>

namespace {

double cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

template <typename F>
double best_ns(F body, int iters) {
  double best = 1e30;
  for (int run = 0; run < 5; ++run) {
    double t0 = cpu_ns();
    for (int i = 0; i < iters; ++i) body(i);
    double ns = (cpu_ns() - t0) / iters;
    if (ns < best) best = ns;
  }
  return best;
}

volatile int64_t sink;

}  // namespace

int main() {
  const int n = 1000000;
  rffi::Function add_one = rffi::Function::GetGlobalRequired("testing.add_one");
  rffi::Function echo = rffi::Function::GetGlobalRequired("testing.echo");
  rffi::Function cpp_add_one = rffi::Function::FromTyped([](int64_t x) { return x + 1; });
  RFFIObjectHandle h = add_one.get();

  double c_int = best_ns(
      [&](int i) {
        RFFIAny arg, result;
        std::memset(&arg, 0, sizeof(arg));
        std::memset(&result, 0, sizeof(result));
        arg.type_index = kRFFIInt;
        arg.v.v_int64 = i;
        RFFIFunctionCall(h, &arg, 1, &result);
        sink = result.v.v_int64;
      },
      n);
  double cpp_int = best_ns([&](int i) { sink = add_one(i).cast<int64_t>(); }, n);
  double cpp_str = best_ns([&](int) { sink = echo("hello").type_index(); }, n);
  double cpp_long = best_ns([&](int) { sink = echo("a longer string").type_index(); }, n);
  double cpp_cb = best_ns([&](int i) { sink = cpp_add_one(i).cast<int64_t>(); }, n);

  std::printf("| call | ns/call |\n|---|---|\n");
  std::printf("| C: `RFFIFunctionCall(testing.add_one, int)` by hand | %.1f |\n", c_int);
  std::printf("| C++: `add_one(i).cast<int64_t>()` (Rust function) | %.1f |\n", cpp_int);
  std::printf("| C++: `echo(\"hello\")` (string literal, borrowed) | %.1f |\n", cpp_str);
  std::printf("| C++: `echo(\"a longer string\")` (result: a heap string) | %.1f |\n", cpp_long);
  std::printf("| C++: a `FromTyped` C++ lambda, called through rffi | %.1f |\n", cpp_cb);
  return 0;
}
