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

/* A callback that returns the value its context points to. */
static int returns(void* self, const RFFIAny* args, int32_t n, RFFIAny* result) {
  (void)args;
  (void)n;
  *result = *(const RFFIAny*)self;
  return 0;
}

static RFFIAny value_of(int32_t type_index, uint32_t small_len, void* ptr) {
  RFFIAny v;
  memset(&v, 0, sizeof(v));
  v.type_index = type_index;
  v.small_str_len = small_len;
  v.v.v_ptr = ptr;
  return v;
}

/* The callback returning `v` fails both ways with a RuntimeError containing `needle`, and the
 * caller's result is left None. */
static void expect_malformed(RFFIAny v, const char* needle) {
  RFFIObjectHandle f = NULL, apply = get_global("testing.apply");
  RFFIAny arg, result;
  CHECK(RFFIFunctionCreate(&v, returns, NULL, &f) == 0);
  memset(&result, 0, sizeof(result));
  CHECK(RFFIFunctionCall(f, NULL, 0, &result) == -1);
  expect_error("RuntimeError", "an unnamed C function returned a malformed value: ");
  CHECK(result.type_index == kRFFINone && result.v.v_int64 == 0);
  CHECK(RFFIFunctionCall(f, NULL, 0, &result) == -1);
  expect_error("RuntimeError", needle);
  arg = object_arg(f);
  memset(&result, 0, sizeof(result));
  CHECK(RFFIFunctionCall(apply, &arg, 1, &result) == -1);
  expect_error("RuntimeError", needle);
  CHECK(result.type_index == kRFFINone);
  RFFIObjectDecRef(f);
  RFFIObjectDecRef(apply);
}

static void expect_accepted(RFFIAny v) {
  RFFIObjectHandle f = NULL;
  RFFIAny result;
  CHECK(RFFIFunctionCreate(&v, returns, NULL, &f) == 0);
  memset(&result, 0, sizeof(result));
  CHECK(RFFIFunctionCall(f, NULL, 0, &result) == 0 && result.type_index == v.type_index);
  RFFIObjectDecRef(f);
}

static void test_malformed_results_are_refused(void) {
  static char text[] = "borrowed text";
  static const char long_text[] = "a string too long to be stored inline";
  RFFIByteArray ba = {text, sizeof(text) - 1}, long_ba = ba_of(long_text);
  RFFIAny str, wrong;
  DLTensor t;
  memset(&t, 0, sizeof(t));
  expect_malformed(value_of(kRFFIStr, 0, NULL), "type index 65 (ffi.String) with a NULL object");
  expect_malformed(value_of(kRFFIFunction, 0, NULL), "type index 68 (ffi.Function) with a NULL");
  expect_malformed(value_of(kRFFIRawStr, 0, text), "type index 8 (const char*) is for arguments");
  expect_malformed(value_of(kRFFIByteArrayPtr, 0, &ba), "type index 9 (RFFIByteArray*) is for");
  expect_malformed(value_of(kRFFIObjectRValueRef, 0, &ba), "type index 10 (ObjectRValueRef) is");
  expect_malformed(value_of(kRFFISmallStr, 8, NULL), "a small string of length 8");
  expect_malformed(value_of(kRFFISmallBytes, 4000000000u, NULL), "small bytes of length 4000000000");
  expect_malformed(value_of(kRFFIDLTensorPtr, 0, NULL), "a NULL DLTensor*");
  expect_malformed(value_of(-1, 0, NULL), "unknown type index -1");
  expect_malformed(value_of(INT32_MIN, 0, NULL), "unknown type index -2147483648");
  expect_malformed(value_of(13, 0, NULL), "unknown type index 13");
  expect_malformed(value_of(63, 0, NULL), "unknown type index 63");
  expect_malformed(value_of(127, 0, text), "unknown type index 127");
  expect_malformed(value_of(99999, 0, text), "unknown type index 99999");
  /* A real string object announced as an Array: the header disagrees. */
  memset(&str, 0, sizeof(str));
  CHECK(RFFIStringFromByteArray(&long_ba, &str) == 0 && str.type_index == kRFFIStr);
  wrong = str;
  wrong.type_index = kRFFIArray;
  expect_malformed(wrong, "type index 71 (ffi.Array) for an object whose header says 65");
  /* Well-formed values still pass. */
  expect_accepted(value_of(kRFFISmallStr, 7, NULL));
  expect_accepted(value_of(kRFFIDLTensorPtr, 0, &t));
  expect_accepted(int_any(3));
  CHECK(RFFIObjectIncRef(str.v.v_obj) == 0); /* the call moves one reference to its caller */
  expect_accepted(str);
  CHECK(RFFIObjectDecRef(str.v.v_obj) == 0);
  CHECK(RFFIObjectDecRef(str.v.v_obj) == 0);
}

int main(void) {
  test_statuses_are_normalized();
  test_malformed_results_are_refused();
  return finish("test_foreign");
}
