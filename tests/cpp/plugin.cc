// A C++ plugin built with RFFI_PLUGIN: no link to librffi.so, the loader hands it the runtime.
// Loaded by test_cpp_api.cc. Two translation units (this one and plugin_more.cc) check that the
// weak loader symbols and the init-block list hold across files.
#define RFFI_PLUGIN
#include <rffi/rffi.hpp>

#include <stdexcept>
#include <string>

namespace {

int64_t scale(int64_t x, double factor) { return static_cast<int64_t>(x * factor); }

std::string greet(const std::string& who) { return "hello, " + who; }

// Sums a float32 tensor (any strides), refusing other dtypes with a ValueError.
double tensor_sum(const rffi::Tensor& t) {
  if (t.dtype().code != kDLFloat || t.dtype().bits != 32) {
    RFFI_THROW(ValueError) << "tensor_sum expects float32, got code " << int(t.dtype().code);
  }
  const float* base = static_cast<const float*>(t.data_ptr());
  double sum = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    int64_t offset = 0, rest = i;
    for (int32_t d = t.ndim() - 1; d >= 0; --d) {
      offset += (rest % t.shape()[d]) * t.strides()[d];
      rest /= t.shape()[d];
    }
    sum += base[offset];
  }
  return sum;
}

}  // namespace

RFFI_EXPORT_TYPED_FUNC(scale, scale)
RFFI_EXPORT_TYPED_FUNC(always_throws, [](int64_t x) -> int64_t {
  throw std::out_of_range("index " + std::to_string(x) + " is out of range");
})
RFFI_EXPORT_TYPED_FUNC(tensor_sum, tensor_sum)

RFFI_REGISTER_GLOBAL("cpp_plugin.greet", greet)
RFFI_REGISTER_GLOBAL("cpp_plugin.iota", [](int64_t n) {
  rffi::Tensor t = rffi::Tensor::Empty({n}, DLDataType{kDLFloat, 32, 1});
  float* p = static_cast<float*>(t.data_ptr());
  for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(i);
  return t;
})
