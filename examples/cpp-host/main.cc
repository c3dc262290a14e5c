// A C++ program using the rffi runtime through <rffi/rffi.hpp>: typed calls of Rust functions,
// a C++ lambda registered by name and called back from Rust, errors crossing both ways with
// their tracebacks, containers and tensors, and plugins (C++ and Rust) loaded at run time.
//
// usage: cpp-host <libcpp_plugin.so> [librust_plugin.so]
#include <rffi/rffi.hpp>

#include <cstdio>
#include <iostream>

int main(int argc, char** argv) {
  using rffi::Function;
  RFFIVersion v;
  RFFIGetVersion(&v);
  std::cout << "rffi ABI " << v.major << "." << v.minor << "." << v.patch << "\n";

  // Call a Rust function by name with C++ arguments.
  Function add_one = Function::GetGlobalRequired("testing.add_one");
  std::cout << "testing.add_one(41) = " << add_one(41).cast<int64_t>() << "\n";

  // Register a C++ lambda; Rust's testing.apply calls it back.
  Function::SetGlobal("demo.scale", Function::FromTyped([](int64_t x) { return 3 * x; },
                                                        "demo.scale"));
  Function apply = Function::GetGlobalRequired("testing.apply");
  std::cout << "testing.apply(demo.scale, 14) = "
            << apply(Function::GetGlobalRequired("demo.scale"), 14).cast<int64_t>() << "\n";

  // A Rust error arrives as rffi::Error, with kind, message and traceback.
  try {
    Function::GetGlobalRequired("testing.raise_error")("ValueError", "something went wrong");
  } catch (const rffi::Error& e) {
    std::cout << "caught " << e.what() << "\n" << e.TracebackMostRecentCallLast() << "\n";
  }
  // A wrong argument type is a TypeError naming the function and the position.
  try {
    add_one("forty-one");
  } catch (const rffi::Error& e) {
    std::cout << "caught " << e.what() << "\n";
  }

  if (argc < 2) return 0;
  rffi::Module cpp = rffi::Module::LoadFromFile(argv[1]);
  std::cout << "loaded " << argv[1] << "\n";
  std::cout << "cpp_plugin.add(40, 2) = "
            << Function::GetGlobalRequired("cpp_plugin.add")(40, 2).cast<int64_t>() << "\n";
  std::cout << "cpp_plugin.describe([1, 2]) = "
            << Function::GetGlobalRequired("cpp_plugin.describe")(rffi::Array{1, 2})
                   .cast<std::string>()
            << "\n";
  rffi::Tensor x = rffi::Tensor::Empty({4}, DLDataType{kDLFloat, 32, 1});
  rffi::Tensor y = rffi::Tensor::Empty({4}, DLDataType{kDLFloat, 32, 1});
  for (int i = 0; i < 4; ++i) static_cast<float*>(x.data_ptr())[i] = static_cast<float>(i);
  Function::GetGlobalRequired("cpp_plugin.axpy")(2.0, x, y);
  std::cout << "cpp_plugin.axpy(2, [0 1 2 3], 0) ->";
  for (int i = 0; i < 4; ++i) std::cout << " " << static_cast<float*>(y.data_ptr())[i];
  std::cout << "\n";
  Function shout = cpp.GetFunctionRequired("shout");
  std::cout << "module function shout(\"hello\") = " << shout("hello").cast<std::string>() << "\n";
  try {
    shout("");
  } catch (const rffi::Error& e) {
    std::cout << "caught " << e.what() << "\n" << e.TracebackMostRecentCallLast() << "\n";
  }
  if (argc >= 3) {
    rffi::Module::LoadFromFile(argv[2]);
    std::cout << "rust_plugin.add(40, 2) = "
              << Function::GetGlobalRequired("rust_plugin.add")(40, 2).cast<int64_t>() << "\n";
  }
  return 0;
}
