/* Foreign code entered by the runtime: C callbacks that break the calling convention, return
 * malformed values, or recurse without end. Whatever a callback does, a call fails only as -1
 * with an error raised, on both ways in: the direct one (RFFIFunctionCall on the callback) and
 * through a Rust function (testing.apply).
 *
 * Run with RFFI_MAX_CALL_DEPTH unset: main sets it to check that it is read. */
#define _GNU_SOURCE
#include <pthread.h>
#include <ucontext.h>
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

/* ---- Deep recursion: callback -> runtime -> callback ... ---- */

typedef struct {
  RFFIObjectHandle self;  /* the Function made from this context */
  int through_rust;       /* recurse through testing.apply instead of calling directly */
  int64_t deepest;        /* the deepest level entered */
} Recursion;

/* recurse(k): 0 if k == 0, else recurse(k - 1) + 1. */
static int recurse(void* ctx, const RFFIAny* args, int32_t n, RFFIAny* result) {
  Recursion* r = (Recursion*)ctx;
  RFFIAny call_args[2], inner;
  int64_t k;
  if (n != 1 || args[0].type_index != kRFFIInt) {
    RFFIErrorSetRaisedFromCStr("TypeError", "recurse expects one int");
    return -1;
  }
  k = args[0].v.v_int64;
  if (k > r->deepest) r->deepest = k;
  if (k == 0) {
    *result = int_any(0);
    return 0;
  }
  memset(&inner, 0, sizeof(inner));
  if (r->through_rust) {
    RFFIObjectHandle apply = get_global("testing.apply");
    int rc;
    call_args[0] = object_arg(r->self);
    call_args[1] = int_any(k - 1);
    rc = RFFIFunctionCall(apply, call_args, 2, &inner);
    RFFIObjectDecRef(apply);
    if (rc != 0) return -1;
  } else {
    call_args[0] = int_any(k - 1);
    if (RFFIFunctionCall(r->self, call_args, 1, &inner) != 0) return -1;
  }
  *result = int_any(inner.v.v_int64 + 1);
  return 0;
}

/* Runs recurse(depth) from the top; returns the call's status. */
static int run_recursion(int64_t depth, int through_rust, RFFIAny* result) {
  Recursion r;
  RFFIAny arg = int_any(depth);
  int rc;
  r.through_rust = through_rust;
  r.deepest = 0;
  CHECK(RFFIFunctionCreate(&r, recurse, NULL, &r.self) == 0);
  memset(result, 0, sizeof(*result));
  rc = RFFIFunctionCall(r.self, &arg, 1, result);
  RFFIObjectDecRef(r.self);
  return rc;
}

static void test_call_depth_limit(void) {
  RFFIAny result;
  int32_t prev = 0;
  /* The environment variable main set before the first callback. */
  CHECK(run_recursion(76, 0, &result) == 0 && result.v.v_int64 == 76);
  CHECK(run_recursion(77, 0, &result) == -1);
  expect_error("RecursionError", "maximum call depth 77 exceeded when calling an unnamed C");
  CHECK(RFFISetMaxCallDepth(2000, &prev) == 0 && prev == 77);
  CHECK(run_recursion(2001, 1, &result) == -1);
  expect_error("RecursionError", "maximum call depth 2000 exceeded");
  CHECK(run_recursion(1000, 1, &result) == 0 && result.v.v_int64 == 1000);
  /* 100 000 levels under the default limit, straight and through a Rust function: an error
   * (from the depth limit, or the stack guard first where frames are large, as in a debug
   * build), not a crash. */
  CHECK(RFFISetMaxCallDepth(RFFI_DEFAULT_MAX_CALL_DEPTH, &prev) == 0 && prev == 2000);
  CHECK(run_recursion(100000, 0, &result) == -1);
  expect_error("RecursionError", "RFFI_MAX_CALL_DEPTH");
  CHECK(run_recursion(100000, 1, &result) == -1);
  expect_error("RecursionError", "RFFI_MAX_CALL_DEPTH");
  /* Bad limits are refused and change nothing. */
  CHECK(RFFISetMaxCallDepth(0, &prev) == -1);
  expect_error("ValueError", "the maximum call depth must be an integer from 1 to 2147483647, not 0");
  CHECK(RFFISetMaxCallDepth(-5, NULL) == -1);
  expect_error("ValueError", "not -5");
  CHECK(RFFISetMaxCallDepth(10000, &prev) == 0 && prev == 10000);
}

/* With no depth limit to speak of, the stack check stops the recursion before the stack ends:
 * on the 8 MiB main thread and on a thread with a 512 KiB stack. */
static void* deep_on_this_thread(void* through_rust) {
  RFFIAny result;
  CHECK(run_recursion(10000000, through_rust != NULL, &result) == -1);
  expect_error("RecursionError", "C stack nearly exhausted when calling an unnamed C function");
  return NULL;
}

static void test_stack_guard(void) {
  pthread_attr_t attr;
  pthread_t t;
  int32_t prev = 0;
  CHECK(RFFISetMaxCallDepth(2147483647, &prev) == 0);
  deep_on_this_thread(NULL);
  deep_on_this_thread(&prev);
  CHECK(pthread_attr_init(&attr) == 0);
  CHECK(pthread_attr_setstacksize(&attr, 512 * 1024) == 0);
  CHECK(pthread_create(&t, &attr, deep_on_this_thread, NULL) == 0);
  CHECK(pthread_join(t, NULL) == 0);
  CHECK(pthread_create(&t, &attr, deep_on_this_thread, &prev) == 0);
  CHECK(pthread_join(t, NULL) == 0);
  pthread_attr_destroy(&attr);
  CHECK(RFFISetMaxCallDepth(prev, NULL) == 0);
}

/* A callback entered on another stack (a fiber's, made with makecontext on heap memory, below
 * the thread's own stack) is not mistaken for one at the end of the thread's stack. */
static ucontext_t g_thread_context, g_fiber_context;

static void on_fiber(void) {
  RFFIAny result;
  CHECK(run_recursion(50, 0, &result) == 0 && result.v.v_int64 == 50);
  CHECK(run_recursion(50, 1, &result) == 0 && result.v.v_int64 == 50);
}

static void test_callbacks_on_another_stack(void) {
  size_t size = 1 << 20;
  char* stack = (char*)malloc(size);
  CHECK(stack != NULL && getcontext(&g_fiber_context) == 0);
  g_fiber_context.uc_stack.ss_sp = stack;
  g_fiber_context.uc_stack.ss_size = size;
  g_fiber_context.uc_link = &g_thread_context;
  makecontext(&g_fiber_context, on_fiber, 0);
  CHECK(swapcontext(&g_thread_context, &g_fiber_context) == 0);
  free(stack);
}

int main(void) {
  /* Read when the first callback is entered. */
  setenv("RFFI_MAX_CALL_DEPTH", "77", 1);
  test_statuses_are_normalized();
  test_malformed_results_are_refused();
  test_call_depth_limit();
  test_stack_guard();
  test_callbacks_on_another_stack();
  return finish("test_foreign");
}
