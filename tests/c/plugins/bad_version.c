/* A plugin that claims an ABI this runtime cannot provide: the loader must refuse it before its
 * init runs. */
#include "rffi/c_api.h"

__attribute__((visibility("default"))) const RFFIVersion rffi_plugin_version = {99, 0, 0};

static int nop(void* self, const RFFIAny* args, int32_t n, RFFIAny* result) {
  (void)self;
  (void)args;
  (void)n;
  (void)result;
  return 0;
}

/* Would register bad_version.never if it ever ran. */
__attribute__((visibility("default"))) int32_t rffi_plugin_init(const RFFIHostApi* host) {
  RFFIObjectHandle f = NULL;
  RFFIByteArray name = {"bad_version.never", 17};
  if (host->function_create(NULL, nop, NULL, &f) != 0) return -1;
  return host->function_set_global(&name, f, 0);
}
