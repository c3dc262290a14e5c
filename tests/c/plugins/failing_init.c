/* A plugin whose init registers one function and then fails: the loader must undo the
 * registration and report the plugin's error. */
#include <string.h>
#include "rffi/c_api.h"

__attribute__((visibility("default"))) const RFFIVersion rffi_plugin_version = {
    RFFI_VERSION_MAJOR, RFFI_VERSION_MINOR, RFFI_VERSION_PATCH};

static int nop(void* self, const RFFIAny* args, int32_t n, RFFIAny* result) {
  (void)self;
  (void)args;
  (void)n;
  (void)result;
  return 0;
}

__attribute__((visibility("default"))) int32_t rffi_plugin_init(const RFFIHostApi* host) {
  RFFIObjectHandle f = NULL;
  RFFIByteArray name = {"failing_init.registered_first", 29};
  if (host->function_create(NULL, nop, NULL, &f) != 0) return -1;
  if (host->function_set_global(&name, f, 0) != 0) return -1;
  host->object_dec_ref(f);
#ifdef REGISTER_DUPLICATE
  {
    /* A name the runtime already has, without override: refused. */
    RFFIByteArray dup = {"testing.add_one", 15};
    RFFIObjectHandle g = NULL;
    host->function_create(NULL, nop, NULL, &g);
    if (host->function_set_global(&dup, g, 0) != 0) {
      host->object_dec_ref(g);
      return -1;
    }
    host->object_dec_ref(g);
    return 0;
  }
#else
  host->error_set_raised_from_cstr("ValueError", "failing_init: configuration missing");
  return -1;
#endif
}
