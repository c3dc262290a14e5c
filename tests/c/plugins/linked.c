/* A C plugin that links librffi.so (found by its SONAME, already loaded by the host) and
 * registers through the ordinary C API from its init entry. */
#include <string.h>
#include "rffi/c_api.h"

__attribute__((visibility("default"))) const RFFIVersion rffi_plugin_version = {
    RFFI_VERSION_MAJOR, RFFI_VERSION_MINOR, RFFI_VERSION_PATCH};

static int triple(void* self, const RFFIAny* args, int32_t n, RFFIAny* result) {
  (void)self;
  if (n != 1 || args[0].type_index != kRFFIInt) {
    RFFIErrorSetRaisedFromCStr("TypeError", "linked.triple expects one int");
    return -1;
  }
  result->type_index = kRFFIInt;
  result->v.v_int64 = 3 * args[0].v.v_int64;
  return 0;
}

__attribute__((visibility("default"))) int32_t rffi_plugin_init(const RFFIHostApi* host) {
  RFFIObjectHandle f = NULL;
  RFFIByteArray name = {"linked.triple", 13};
  int rc;
  (void)host;
  if (RFFIFunctionCreate(NULL, triple, NULL, &f) != 0) return -1;
  rc = RFFIFunctionSetGlobal(&name, f, 0);
  RFFIObjectDecRef(f);
  return rc;
}
