/* A library with no init entry: a symbol-only module whose functions are its __rffi_<name>
 * exports, called with a NULL handle. The loader fills rffi_plugin_host_api, through which the
 * functions raise errors in whichever runtime loaded the library. */
#include "rffi/c_api.h"

__attribute__((visibility("default"))) const RFFIHostApi* rffi_plugin_host_api = NULL;

__attribute__((visibility("default"))) int __rffi_negate(void* self, const RFFIAny* args,
                                                          int32_t n, RFFIAny* result) {
  if (self != NULL || n != 1 || args[0].type_index != kRFFIInt) {
    rffi_plugin_host_api->error_set_raised_from_cstr("TypeError", "negate expects one int");
    return -1;
  }
  result->type_index = kRFFIInt;
  result->v.v_int64 = -args[0].v.v_int64;
  return 0;
}
