/* Foreign code entered by the runtime: C callbacks that break the calling convention. Whatever
 * status a callback returns, a call fails only as -1 with an error raised, on both ways in: the
 * direct one (RFFIFunctionCall on the callback) and through a Rust function (testing.apply). */
#include <stdint.h>
#include <stdlib.h>
#include "rffi/c_api.h"
#include "check.h"

/* What the misbehaving callback does: return `status`, after raising `raise_kind` if set. */
typedef struct {
  int32_t status;
  const char* raise_kind;
} Behaviour;

static int misbehave(void* self, const RFFIAny* args, int32_t n, RFFIAny* result) {
  const Behaviour* b = (const Behaviour*)self;
  (void)args;
  (void)n;
  (void)result;
  if (b->raise_kind != NULL) RFFIErrorSetRaisedFromCStr(b->raise_kind, "raised by the callback");
  return b->status;
}

/* Calls `f` directly, then through testing.apply; each must give -1 and an error of `kind`
 * containing `needle`. */
static void expect_failure_both_ways(RFFIObjectHandle f, const char* kind, const char* needle) {
  RFFIObjectHandle apply = get_global("testing.apply");
  RFFIAny arg, result;
  memset(&result, 0, sizeof(result));
  CHECK(RFFIFunctionCall(f, NULL, 0, &result) == -1);
  expect_error(kind, needle);
  arg = object_arg(f);
  memset(&result, 0, sizeof(result));
  CHECK(RFFIFunctionCall(apply, &arg, 1, &result) == -1);
  expect_error(kind, needle);
  RFFIObjectDecRef(apply);
}

static void test_statuses_are_normalized(void) {
  static Behaviour no_error = {-1, NULL}, five = {5, NULL}, five_raised = {5, "KeyError"},
                   env_raised = {-2, "EnvErrorAlreadySet"}, minus_one_raised = {-1, "IndexError"},
                   big = {INT32_MIN, NULL};
  RFFIObjectHandle f = NULL;
  RFFIByteArray name = ba_of("test_foreign.status");
  CHECK(RFFIFunctionCreate(&no_error, misbehave, NULL, &f) == 0);
  expect_failure_both_ways(f, "RuntimeError",
                           "an unnamed C function returned -1 without raising an error");
  RFFIObjectDecRef(f);
  /* A registered callback is named. */
  CHECK(RFFIFunctionCreate(&five, misbehave, NULL, &f) == 0);
  CHECK(RFFIFunctionSetGlobal(&name, f, 1) == 0);
  expect_failure_both_ways(f, "RuntimeError",
                           "the C function `test_foreign.status` returned status 5 without "
                           "raising an error");
  CHECK(RFFIFunctionRemoveGlobal(&name) == 0);
  RFFIObjectDecRef(f);
  CHECK(RFFIFunctionCreate(&big, misbehave, NULL, &f) == 0);
  expect_failure_both_ways(f, "RuntimeError", "returned status -2147483648");
  RFFIObjectDecRef(f);
  /* An error the callback raised is kept, whatever non-zero status came with it. */
  CHECK(RFFIFunctionCreate(&five_raised, misbehave, NULL, &f) == 0);
  expect_failure_both_ways(f, "KeyError", "raised by the callback");
  RFFIObjectDecRef(f);
  CHECK(RFFIFunctionCreate(&env_raised, misbehave, NULL, &f) == 0);
  expect_failure_both_ways(f, "EnvErrorAlreadySet", "raised by the callback");
  RFFIObjectDecRef(f);
  CHECK(RFFIFunctionCreate(&minus_one_raised, misbehave, NULL, &f) == 0);
  expect_failure_both_ways(f, "IndexError", "raised by the callback");
  RFFIObjectDecRef(f);
}

int main(void) {
  test_statuses_are_normalized();
  return finish("test_foreign");
}
