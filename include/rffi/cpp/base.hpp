/*
 * rffi C++ API, base layer: which runtime entry points the C++ classes call, and the small helpers
 * every other part uses. Included by <rffi/rffi.hpp>; not meant to be included alone.
 *
 * Two build modes, chosen per binary:
 * - host (default): the program links librffi.so (`-lrffi`, see `pkg-config --libs rffi`) and the
 *   C++ classes call the C API directly.
 * - plugin (`#define RFFI_PLUGIN` before including, or `-DRFFI_PLUGIN`): a shared library loaded
 *   through the runtime (RFFIModuleLoadFromFile, rffi.load_module, Module::load) that links
 *   nothing; the loader hands it the runtime's entry points (`RFFIHostApi`), so it works in a C,
 *   C++, Python or Rust host alike. Every translation unit of one plugin must use the same mode.
 */
#ifndef RFFI_CPP_BASE_HPP_
#define RFFI_CPP_BASE_HPP_

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "../c_api.h"

#if __cplusplus < 201703L && !(defined(_MSVC_LANG) && _MSVC_LANG >= 201703L)
#error "rffi.hpp needs C++17 or later (-std=c++17)"
#endif

#define RFFI_DLL_EXPORT __attribute__((visibility("default")))

#ifdef RFFI_PLUGIN
extern "C" {
// Set by the runtime's loader before `rffi_plugin_init` runs (see ffi-core/src/abi/plugin.rs).
// Weak: every translation unit of the plugin defines it, the linker keeps one.
__attribute__((weak, used)) RFFI_DLL_EXPORT const RFFIHostApi* rffi_plugin_host_api = nullptr;
}
#endif

// Everything below is private to each binary (hidden), so two plugins built with this header
// never share or interpose each other's inline state, whatever the host's dlopen flags.
#pragma GCC visibility push(hidden)

namespace rffi {
namespace detail {

#ifdef RFFI_PLUGIN
inline const RFFIHostApi& api() {
  const RFFIHostApi* host = rffi_plugin_host_api;
  if (host == nullptr) {
    // No error can be raised without the runtime: this is a plain C++ exception.
    throw std::logic_error(
        "rffi: this plugin (built with RFFI_PLUGIN) used the runtime before the runtime loaded it");
  }
  return *host;
}
#else
// The linked runtime's C functions, in the shape of the table a plugin receives, so both modes
// share one code path.
inline const RFFIHostApi& api() {
  static const RFFIHostApi table = {
      {RFFI_VERSION_MAJOR, RFFI_VERSION_MINOR, RFFI_VERSION_PATCH},
      static_cast<uint32_t>(sizeof(RFFIHostApi)),
      &RFFIObjectIncRef,
      &RFFIObjectDecRef,
      &RFFIFunctionCreate,
      &RFFIFunctionCall,
      &RFFIFunctionGetGlobal,
      &RFFIFunctionSetGlobal,
      &RFFIFunctionRemoveGlobal,
      &RFFIFunctionListGlobalNames,
      &RFFIErrorSetRaised,
      &RFFIErrorSetRaisedFromCStr,
      &RFFIErrorMoveFromRaised,
      &RFFIErrorCreate,
      &RFFIStringFromByteArray,
      &RFFIBytesFromByteArray,
      &RFFIDataTypeFromString,
      &RFFITypeKeyToIndex,
      &RFFITypeRegisterKey,
      &RFFITypeIndexToKey,
      &RFFIModuleLoadFromFile,
      &RFFIEnvSetStream,
      &RFFIEnvGetStream,
      &RFFIEnvGetDLPackManagedTensorAllocator,
      &RFFITensorFromDLPack,
      &RFFITensorFromDLPackVersioned,
      &RFFIEnvSetDLPackManagedTensorAllocator,
      &RFFITypeGetOrAllocIndex,
      &RFFIGetTypeInfo,
      &RFFITypeRegisterField,
      &RFFITypeRegisterMethod,
      &RFFITypeRegisterMetadata,
  };
  return table;
}
#endif

inline RFFIByteArray bytes_of(std::string_view s) {
  RFFIByteArray ba;
  ba.data = s.data();
  ba.size = s.size();
  return ba;
}

inline std::string_view view_of(const RFFIByteArray& ba) {
  return ba.data == nullptr ? std::string_view() : std::string_view(ba.data, ba.size);
}

inline bool is_object(int32_t type_index) { return type_index >= kRFFIStaticObjectBegin; }

inline RFFIObject* header(RFFIObjectHandle h) { return static_cast<RFFIObject*>(h); }

// Cells sit right after the 24-byte object header.
template <typename Cell>
inline Cell* cell(RFFIObjectHandle h) {
  return reinterpret_cast<Cell*>(static_cast<char*>(h) + sizeof(RFFIObject));
}

inline void inc_ref(RFFIObjectHandle h) {
  if (h != nullptr) api().object_inc_ref(h);
}

inline void dec_ref(RFFIObjectHandle h) noexcept {
  if (h != nullptr) api().object_dec_ref(h);
}

// The name of a type index as error messages print it: `int`, `str`, `ffi.Tensor`, ...
inline std::string type_name(int32_t type_index) {
  switch (type_index) {
    case kRFFIRawStr:
    case kRFFISmallStr:
    case kRFFIStr:
      return "str";
    case kRFFIByteArrayPtr:
    case kRFFISmallBytes:
    case kRFFIBytes:
      return "bytes";
    default:
      break;
  }
  RFFIByteArray key{nullptr, 0};
  if (api().type_index_to_key(type_index, &key) == 0) return std::string(view_of(key));
  api().error_move_from_raised(nullptr);  // not an error worth keeping: name it by number
  return "<unregistered type index " + std::to_string(type_index) + ">";
}

}  // namespace detail
}  // namespace rffi

#pragma GCC visibility pop

#endif  // RFFI_CPP_BASE_HPP_
