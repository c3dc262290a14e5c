/*
 * rffi C++ API: header-only RAII classes over the rffi C ABI (include/rffi/c_api.h).
 *
 *   #include <rffi/rffi.hpp>
 *   rffi::Function add_one = rffi::Function::GetGlobalRequired("testing.add_one");
 *   int64_t y = add_one(41).cast<int64_t>();                 // 42
 *   auto twice = rffi::Function::FromTyped([](int64_t x) { return 2 * x; }, "twice");
 *   rffi::Function::SetGlobal("demo.twice", twice);          // callable from C, Rust, Python
 *
 * Values: Any (owned), AnyView (borrowed), String; objects: ObjectRef, Function, Array, Map,
 * List, Dict, Tensor, Module; errors: rffi::Error (a C++ exception carrying kind, message and traceback).
 * Programs link librffi.so (`pkg-config --cflags --libs rffi`, or CMake `rffi::rffi`); plugins
 * define RFFI_PLUGIN and link nothing (see cpp/base.hpp and cpp/plugin.hpp). C++17 or later.
 */
#ifndef RFFI_RFFI_HPP_
#define RFFI_RFFI_HPP_

#include "cpp/base.hpp"
#include "cpp/object.hpp"
#include "cpp/error.hpp"
#include "cpp/any.hpp"
#include "cpp/containers.hpp"
#include "cpp/list_dict.hpp"
#include "cpp/function.hpp"
#include "cpp/plugin.hpp"

#endif  // RFFI_RFFI_HPP_
