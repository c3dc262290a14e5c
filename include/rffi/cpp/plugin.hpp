/*
 * rffi C++ API: plugins. Exporting typed C++ functions from a shared library
 * (`RFFI_EXPORT_TYPED_FUNC`), registering global functions when the library is loaded
 * (`RFFI_REGISTER_GLOBAL`, `RFFI_STATIC_INIT_BLOCK`), and, for plugins built with RFFI_PLUGIN,
 * the loader's symbols (`rffi_plugin_version`, `rffi_plugin_init`; see ffi-core/src/abi/plugin.rs).
 * Part of <rffi/rffi.hpp>.
 */
#ifndef RFFI_CPP_PLUGIN_HPP_
#define RFFI_CPP_PLUGIN_HPP_

#include <cstdio>

#include "function.hpp"

#pragma GCC visibility push(hidden)

namespace rffi {
namespace detail {

struct InitBlock {
  void (*run)();
  const char* file;
  int line;
};

// The blocks of this binary, in static-initialization order.
inline std::vector<InitBlock>& init_blocks() {
  static std::vector<InitBlock> blocks;
  return blocks;
}

#ifdef RFFI_PLUGIN
// Runs when the loader calls `rffi_plugin_init`: the runtime is reachable from then on, and a
// block that throws fails the load (the loader undoes what the plugin registered).
inline int32_t run_init_blocks() noexcept {
  for (const InitBlock& b : init_blocks()) {
    try {
      b.run();
    } catch (...) {
      return raise_current_exception("<static init block>", b.file, b.line);
    }
  }
  return 0;
}
#endif

// Registers a block at static initialization. In a plugin it waits for the loader; in a
// program or library that links librffi.so the runtime is already there, so it runs now (an
// exception cannot propagate out of static initialization: it is reported on stderr).
struct InitBlockRegistrar {
  InitBlockRegistrar(void (*run)(), const char* file, int line) {
#ifdef RFFI_PLUGIN
    init_blocks().push_back(InitBlock{run, file, line});
#else
    try {
      run();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "rffi: static init block at %s:%d failed: %s\n", file, line, e.what());
    } catch (...) {
      std::fprintf(stderr, "rffi: static init block at %s:%d failed\n", file, line);
    }
#endif
  }
};

}  // namespace detail
}  // namespace rffi

#pragma GCC visibility pop

#ifdef RFFI_PLUGIN
extern "C" {
// The ABI this plugin was built for; the loader refuses it when the runtime's differs. Weak:
// every translation unit defines it, the linker keeps one.
__attribute__((weak, used)) RFFI_DLL_EXPORT extern const RFFIVersion rffi_plugin_version = {
    RFFI_VERSION_MAJOR, RFFI_VERSION_MINOR, RFFI_VERSION_PATCH};

// Called once by the loader after `rffi_plugin_host_api` is set: runs the static init blocks
// (the RFFI_REGISTER_GLOBAL registrations among them).
__attribute__((weak, used)) RFFI_DLL_EXPORT int32_t rffi_plugin_init(const RFFIHostApi* host) {
  rffi_plugin_host_api = host;
  return ::rffi::detail::run_init_blocks();
}
}
#endif

#define RFFI_DETAIL_CONCAT2(a, b) a##b
#define RFFI_DETAIL_CONCAT(a, b) RFFI_DETAIL_CONCAT2(a, b)

#define RFFI_DETAIL_STATIC_INIT_BLOCK(id)                                                    \
  static void RFFI_DETAIL_CONCAT(rffi_static_init_block_, id)();                             \
  static const ::rffi::detail::InitBlockRegistrar RFFI_DETAIL_CONCAT(rffi_static_init_reg_, \
                                                                     id)(                    \
      &RFFI_DETAIL_CONCAT(rffi_static_init_block_, id), __FILE__, __LINE__);                 \
  static void RFFI_DETAIL_CONCAT(rffi_static_init_block_, id)()

/*!
 * \brief Code that runs when the library is loaded, with the runtime ready:
 *   RFFI_STATIC_INIT_BLOCK() { rffi::Function::SetGlobal("my.f", rffi::Function::FromTyped(f)); }
 * In a plugin (RFFI_PLUGIN) a block that throws fails the load with that error.
 */
#define RFFI_STATIC_INIT_BLOCK() RFFI_DETAIL_STATIC_INIT_BLOCK(__COUNTER__)

/*! \brief Registers the typed C++ callable `Fn` as the global function `Name` at load. */
#define RFFI_REGISTER_GLOBAL(Name, Fn)                                                  \
  RFFI_STATIC_INIT_BLOCK() {                                                            \
    ::rffi::Function::SetGlobal(Name, ::rffi::Function::FromTyped(Fn, Name, __FILE__, __LINE__)); \
  }

/*!
 * \brief Exports the typed C++ callable `Fn` as the safe-call symbol `__rffi_<ExportName>`, which
 * `Module::GetFunction("ExportName")` (C: RFFIModuleGetFunction, Python: `module.ExportName`)
 * finds. Arguments are converted with type checks; exceptions become rffi errors.
 */
#define RFFI_EXPORT_TYPED_FUNC(ExportName, Fn)                                                 \
  extern "C" RFFI_DLL_EXPORT int32_t __rffi_##ExportName(void* self, const RFFIAny* args,     \
                                                         int32_t num_args, RFFIAny* result) { \
    (void)self;                                                                                \
    return ::rffi::detail::call_typed_safe(#ExportName, __FILE__, __LINE__, Fn, args, num_args, \
                                           result);                                            \
  }

#endif  // RFFI_CPP_PLUGIN_HPP_
