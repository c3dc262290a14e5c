// Second translation unit of the test plugin (see plugin.cc).
#define RFFI_PLUGIN
#include <rffi/rffi.hpp>

// Calls back into whatever the host passes: a C++ -> host -> C++ round trip.
RFFI_REGISTER_GLOBAL("cpp_plugin.apply_twice", [](rffi::Function f, rffi::Any x) {
  return f(f(x));
})

// Fails the load when the host sets RFFI_TEST_FAIL_INIT, to test the init error path.
RFFI_STATIC_INIT_BLOCK() {
  if (std::getenv("RFFI_TEST_FAIL_INIT") != nullptr) {
    RFFI_THROW(RuntimeError) << "init refused on request";
  }
}
