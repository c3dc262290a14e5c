/* A symbol-only plugin for the Python tests (no rffi_plugin_init): functions found by name as
 * exported __rffi_<name> safe-call symbols. Built by conftest.py with the C compiler. */
#define _POSIX_C_SOURCE 200112L
#include <pthread.h>
#include <string.h>
#include <time.h>
#include "rffi/c_api.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT const RFFIVersion rffi_plugin_version = {RFFI_VERSION_MAJOR, RFFI_VERSION_MINOR,
                                            RFFI_VERSION_PATCH};
EXPORT const RFFIHostApi* rffi_plugin_host_api = NULL;

static int fail(const char* kind, const char* message) {
  if (rffi_plugin_host_api) rffi_plugin_host_api->error_set_raised_from_cstr(kind, message);
  return -1;
}

/* sleep_ms(ms): blocks the calling thread, for the test that a native call leaves the GIL free. */
EXPORT int __rffi_sleep_ms(void* self, const RFFIAny* args, int32_t n, RFFIAny* result) {
  (void)self;
  if (n != 1 || args[0].type_index != kRFFIInt) return fail("TypeError", "sleep_ms(int)");
  struct timespec ts;
  ts.tv_sec = args[0].v.v_int64 / 1000;
  ts.tv_nsec = (args[0].v.v_int64 % 1000) * 1000000L;
  nanosleep(&ts, NULL);
  result->type_index = kRFFINone;
  return 0;
}

/* add3(a, b, c) = a + b + c. */
EXPORT int __rffi_add3(void* self, const RFFIAny* args, int32_t n, RFFIAny* result) {
  (void)self;
  if (n != 3) return fail("TypeError", "add3 expects 3 ints");
  for (int i = 0; i < 3; ++i) {
    if (args[i].type_index != kRFFIInt) return fail("TypeError", "add3 expects 3 ints");
  }
  result->type_index = kRFFIInt;
  result->v.v_int64 = args[0].v.v_int64 + args[1].v.v_int64 + args[2].v.v_int64;
  return 0;
}

/* nargs(...) = the number of arguments. */
EXPORT int __rffi_nargs(void* self, const RFFIAny* args, int32_t n, RFFIAny* result) {
  (void)self;
  (void)args;
  result->type_index = kRFFIInt;
  result->v.v_int64 = n;
  return 0;
}

/* call_in_thread(f, x) = f(x), called on a new native thread (no Python thread state there). */
struct job {
  RFFIObjectHandle f;
  RFFIAny arg, result;
  int rc;
  RFFIObjectHandle error;
};

static void* run_job(void* p) {
  struct job* j = p;
  j->rc = rffi_plugin_host_api->function_call(j->f, &j->arg, 1, &j->result);
  if (j->rc != 0) rffi_plugin_host_api->error_move_from_raised(&j->error);
  return NULL;
}

EXPORT int __rffi_call_in_thread(void* self, const RFFIAny* args, int32_t n, RFFIAny* result) {
  (void)self;
  if (!rffi_plugin_host_api) return fail("RuntimeError", "no host table");
  if (n != 2 || args[0].type_index != kRFFIFunction) return fail("TypeError", "call_in_thread(f, x)");
  struct job j;
  memset(&j, 0, sizeof j);
  j.f = (RFFIObjectHandle)args[0].v.v_obj;
  j.arg = args[1];
  pthread_t t;
  if (pthread_create(&t, NULL, run_job, &j) != 0) return fail("RuntimeError", "pthread_create");
  pthread_join(t, NULL);
  if (j.rc != 0) {
    rffi_plugin_host_api->error_set_raised(j.error);
    return -1;
  }
  *result = j.result;
  return 0;
}

/* call_here_then_in_thread(f, x) = f(f(x)): the inner call on the calling thread, the outer one on
 * a new native thread that this call waits for (the first callback must give the GIL back). */
EXPORT int __rffi_call_here_then_in_thread(void* self, const RFFIAny* args, int32_t n,
                                           RFFIAny* result) {
  (void)self;
  if (!rffi_plugin_host_api) return fail("RuntimeError", "no host table");
  if (n != 2 || args[0].type_index != kRFFIFunction) {
    return fail("TypeError", "call_here_then_in_thread(f, x)");
  }
  struct job j;
  memset(&j, 0, sizeof j);
  j.f = (RFFIObjectHandle)args[0].v.v_obj;
  if (rffi_plugin_host_api->function_call(j.f, &args[1], 1, &j.arg) != 0) return -1;
  pthread_t t;
  if (pthread_create(&t, NULL, run_job, &j) != 0) return fail("RuntimeError", "pthread_create");
  pthread_join(t, NULL);
  if (j.arg.type_index >= kRFFIStaticObjectBegin) {
    rffi_plugin_host_api->object_dec_ref((RFFIObjectHandle)j.arg.v.v_obj);
  }
  if (j.rc != 0) {
    rffi_plugin_host_api->error_set_raised(j.error);
    return -1;
  }
  *result = j.result;
  return 0;
}
