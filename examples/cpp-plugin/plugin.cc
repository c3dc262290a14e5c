// An rffi plugin written in C++ with <rffi/rffi.hpp>. Built with RFFI_PLUGIN it links nothing:
// the runtime's loader hands it the runtime, so C, C++, Python and Rust hosts all load it.
//
// Build: g++ -std=c++17 -shared -fPIC -Iinclude examples/cpp-plugin/plugin.cc -o libcpp_plugin.so
// (or with an installed rffi: g++ ... $(pkg-config --cflags rffi) ...)
#define RFFI_PLUGIN
#include <rffi/rffi.hpp>

#include <string>

// Typed C++ functions: rffi converts and checks the arguments, and the result.
static int64_t add(int64_t a, int64_t b) { return a + b; }

// y[i] = a * x[i] + y[i] over two contiguous float32 CPU tensors of one length, in place.
static void axpy(double a, const rffi::Tensor& x, const rffi::Tensor& y) {
  RFFI_CHECK(x.numel() == y.numel()) << "length mismatch: " << x.numel() << " vs " << y.numel();
  for (const rffi::Tensor* t : {&x, &y}) {
    if (t->dtype().code != kDLFloat || t->dtype().bits != 32 || !t->IsContiguous()) {
      RFFI_THROW(TypeError) << "axpy expects contiguous float32 tensors";
    }
  }
  const float* xs = static_cast<const float*>(x.data_ptr());
  float* ys = static_cast<float*>(y.data_ptr());
  for (int64_t i = 0; i < x.numel(); ++i) ys[i] += static_cast<float>(a) * xs[i];
}

// Registered as global functions when the library is loaded.
RFFI_REGISTER_GLOBAL("cpp_plugin.add", add)
RFFI_REGISTER_GLOBAL("cpp_plugin.axpy", axpy)
RFFI_REGISTER_GLOBAL("cpp_plugin.describe", [](rffi::Any x) {
  return "a value of type " + x.type_name();
})

// Exported as the symbol __rffi_shout: found by name through the module (module.shout).
RFFI_EXPORT_TYPED_FUNC(shout, [](std::string s) {
  if (s.empty()) throw std::invalid_argument("shout needs some text");
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s + "!";
})
