// A C++ host built against an installed rffi (CMake: rffi::rffi): calls a runtime function and a
// function of a C++ plugin built against the same installation (rffi::plugin).
// usage: cpp_host <libcpp_plugin.so>
#include <rffi/rffi.hpp>

#include <iostream>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  int64_t y = rffi::Function::GetGlobalRequired("testing.add_one")(41).cast<int64_t>();
  rffi::Module::LoadFromFile(argv[1]);
  int64_t z = rffi::Function::GetGlobalRequired("cpp_plugin.add")(40, 2).cast<int64_t>();
  if (y != 42 || z != 42) return 1;
  std::cout << "cpp host: testing.add_one(41) = " << y << ", cpp_plugin.add(40, 2) = " << z
            << "\n";
  return 0;
}
