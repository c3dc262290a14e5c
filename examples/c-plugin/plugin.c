/* An rffi plugin written in C, with no link-time dependency on the runtime: the loader hands it
 * the runtime's entry points (RFFIHostApi) in rffi_plugin_init and in the rffi_plugin_host_api variable.
 *
 * Build: cc -shared -fPIC -Iinclude examples/c-plugin/plugin.c -o libc_plugin.so */
#include <string.h>
#include "rffi/c_api.h"

#define EXPORT __attribute__((visibility("default")))

/* The ABI this plugin was built for; the loader refuses it if the runtime's differs. */
EXPORT const RFFIVersion rffi_plugin_version = {RFFI_VERSION_MAJOR, RFFI_VERSION_MINOR,
                                            RFFI_VERSION_PATCH};
/* Set by the loader before rffi_plugin_init: how exported functions reach the runtime. */
EXPORT const RFFIHostApi* rffi_plugin_host_api = NULL;

/* c_plugin.mul(a, b) = a * b, registered by name. */
static int mul(void* self, const RFFIAny* args, int32_t n, RFFIAny* result) {
  (void)self;
  if (n != 2 || args[0].type_index != kRFFIInt || args[1].type_index != kRFFIInt) {
    rffi_plugin_host_api->error_set_raised_from_cstr("TypeError", "c_plugin.mul expects two ints");
    return -1;
  }
  result->type_index = kRFFIInt;
  result->v.v_int64 = args[0].v.v_int64 * args[1].v.v_int64;
  return 0;
}

/* c_plugin.fail(): always raises, to show a C error crossing into the host. */
static int fail(void* self, const RFFIAny* args, int32_t n, RFFIAny* result) {
  (void)self;
  (void)args;
  (void)n;
  (void)result;
  rffi_plugin_host_api->error_set_raised_from_cstr("RuntimeError", "c_plugin.fail was called");
  return -1;
}

static int register_fn(const RFFIHostApi* host, const char* name, RFFISafeCallType call) {
  RFFIObjectHandle f = NULL;
  RFFIByteArray ba;
  int rc;
  ba.data = name;
  ba.size = strlen(name);
  if (host->function_create(NULL, call, NULL, &f) != 0) return -1;
  rc = host->function_set_global(&ba, f, 0);
  host->object_dec_ref(f);
  return rc;
}

EXPORT int32_t rffi_plugin_init(const RFFIHostApi* host) {
  if (register_fn(host, "c_plugin.mul", mul) != 0) return -1;
  if (register_fn(host, "c_plugin.fail", fail) != 0) return -1;
  return 0;
}

/* Found on demand by name: module.get_function("square"). Called with a NULL handle. */
EXPORT int __rffi_square(void* self, const RFFIAny* args, int32_t n, RFFIAny* result) {
  (void)self;
  if (n != 1 || args[0].type_index != kRFFIInt) {
    rffi_plugin_host_api->error_set_raised_from_cstr("TypeError", "square expects one int");
    return -1;
  }
  result->type_index = kRFFIInt;
  result->v.v_int64 = args[0].v.v_int64 * args[0].v.v_int64;
  return 0;
}
