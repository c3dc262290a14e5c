/* The C ABI end to end: a C callback registered as a global, Rust functions called from C, errors
 * with tracebacks, strings, dtypes, and bad input. Built with -std=c99 against the header. */
#include <stdint.h>
#include <stdlib.h>
#include "rffi/c_api.h"
#include "check.h"

static int g_deleted = 0;

/* C callback: returns the sum of its int arguments; a non-int argument raises a TypeError. */
static int c_sum(void* self, const RFFIAny* args, int32_t n, RFFIAny* result) {
  int64_t total = *(int64_t*)self;
  int32_t i;
  for (i = 0; i < n; ++i) {
    if (args[i].type_index != kRFFIInt) {
      RFFIErrorSetRaisedFromCStr("TypeError", "c_sum: arguments must be ints");
      return -1;
    }
    total += args[i].v.v_int64;
  }
  result->type_index = kRFFIInt;
  result->v.v_int64 = total;
  return 0;
}

static void c_sum_deleter(void* self) {
  ++g_deleted;
  free(self);
}

static void test_version(void) {
  RFFIVersion v;
  RFFIGetVersion(&v);
  CHECK(v.major == RFFI_VERSION_MAJOR && v.minor == RFFI_VERSION_MINOR);
}

static void test_callback_registered_and_called(void) {
  int64_t* base = (int64_t*)malloc(sizeof(int64_t));
  RFFIObjectHandle f = NULL, g = NULL, apply = NULL;
  RFFIByteArray name = ba_of("c_test.sum");
  RFFIAny args[4], result;
  *base = 100;
  CHECK(RFFIFunctionCreate(base, c_sum, c_sum_deleter, &f) == 0);
  CHECK(RFFIFunctionSetGlobal(&name, f, 0) == 0);
  /* A second registration without override is refused and names the function. */
  CHECK(RFFIFunctionSetGlobal(&name, f, 0) == -1);
  expect_error("KeyError", "c_test.sum");
  CHECK(RFFIFunctionSetGlobal(&name, f, 1) == 0);

  /* The lookup gives back the very object that was registered. */
  g = get_global("c_test.sum");
  CHECK(g == f);
  args[0] = int_any(1);
  args[1] = int_any(2);
  args[2] = int_any(3);
  memset(&result, 0, sizeof(result));
  CHECK(RFFIFunctionCall(g, args, 3, &result) == 0);
  CHECK(result.type_index == kRFFIInt && result.v.v_int64 == 106);

  /* Rust calls the C callback: testing.apply(f, 5, 6). */
  apply = get_global("testing.apply");
  memset(&args[0], 0, sizeof(RFFIAny));
  args[0].type_index = kRFFIFunction;
  args[0].v.v_obj = (RFFIObject*)f;
  args[1] = int_any(5);
  args[2] = int_any(6);
  memset(&result, 0, sizeof(result));
  CHECK(RFFIFunctionCall(apply, args, 3, &result) == 0);
  CHECK(result.type_index == kRFFIInt && result.v.v_int64 == 111);

  /* An error raised by the C callback crosses Rust and comes back to C. */
  memset(&args[1], 0, sizeof(RFFIAny)); /* None: not an int */
  CHECK(RFFIFunctionCall(apply, args, 3, &result) == -1);
  expect_error("TypeError", "c_sum: arguments must be ints");

  /* The context is released once, when the last reference goes. */
  CHECK(RFFIObjectDecRef(g) == 0);
  CHECK(RFFIObjectDecRef(apply) == 0);
  CHECK(RFFIFunctionRemoveGlobal(&name) == 0);
  CHECK(g_deleted == 0);
  CHECK(RFFIObjectDecRef(f) == 0);
  CHECK(g_deleted == 1);
  CHECK(get_global("c_test.sum") == NULL);
  CHECK(RFFIFunctionRemoveGlobal(&name) == -1);
  expect_error("KeyError", "c_test.sum");
}

static void test_rust_function_and_errors(void) {
  RFFIObjectHandle add_one = get_global("testing.add_one");
  RFFIObjectHandle raise = get_global("testing.raise_error");
  RFFIObjectHandle err = NULL;
  RFFIAny args[2], result;
  RFFIByteArray bt, kind_ba = ba_of("ValueError"), msg_ba = ba_of("error XYZ");
  CHECK(add_one != NULL && raise != NULL);
  args[0] = int_any(41);
  memset(&result, 0, sizeof(result));
  CHECK(RFFIFunctionCall(add_one, args, 1, &result) == 0);
  CHECK(result.type_index == kRFFIInt && result.v.v_int64 == 42);

  /* Errors from Rust carry kind, message and a traceback naming the function and its file. */
  CHECK(RFFIStringFromByteArray(&kind_ba, &args[0]) == 0);
  CHECK(RFFIStringFromByteArray(&msg_ba, &args[1]) == 0);
  CHECK(args[1].type_index == kRFFIStr);
  CHECK(RFFIFunctionCall(raise, args, 2, &result) == -1);
  RFFIErrorMoveFromRaised(&err);
  CHECK(err != NULL);
  {
    RFFIByteArray k, m;
    RFFIErrorCell* cell = (RFFIErrorCell*)((char*)err + sizeof(RFFIObject));
    CHECK(RFFIErrorGetKind(err, &k) == 0 && ba_equals(k, "ValueError"));
    CHECK(RFFIErrorGetMessage(err, &m) == 0 && ba_equals(m, "error XYZ"));
    /* The cell is the ABI: a foreign reader sees the same strings. */
    CHECK(ba_equals(cell->kind, "ValueError"));
    CHECK(RFFIErrorGetBacktrace(err, &bt) == 0);
    CHECK(ba_contains(bt, "File \""));
    CHECK(ba_contains(bt, "testing.rs"));
    CHECK(ba_contains(bt, "in testing.raise_error"));
    CHECK(bt.size == cell->backtrace.size);
  }
  /* The slot is empty after moving out. */
  {
    RFFIObjectHandle again = (RFFIObjectHandle)1;
    RFFIErrorMoveFromRaised(&again);
    CHECK(again == NULL);
  }
  CHECK(RFFIObjectDecRef(err) == 0);
  /* Both strings are longer than 7 bytes: objects this test owns. */
  CHECK(args[0].type_index == kRFFIStr && RFFIObjectDecRef(args[0].v.v_obj) == 0);
  CHECK(RFFIObjectDecRef(args[1].v.v_obj) == 0);

  /* A panic in a Rust function is an error, not an abort. */
  {
    RFFIObjectHandle p = get_global("testing.panic");
    RFFIByteArray pm = ba_of("deliberate");
    CHECK(RFFIStringFromByteArray(&pm, &args[0]) == 0);
    CHECK(RFFIFunctionCall(p, args, 1, &result) == -1);
    expect_error("RuntimeError", "panic: deliberate");
    CHECK(args[0].type_index == kRFFIStr && RFFIObjectDecRef(args[0].v.v_obj) == 0);
    CHECK(RFFIObjectDecRef(p) == 0);
  }
  CHECK(RFFIObjectDecRef(add_one) == 0);
  CHECK(RFFIObjectDecRef(raise) == 0);
}

static void test_bad_input(void) {
  RFFIObjectHandle add_one = get_global("testing.add_one");
  RFFIAny args[2], result;
  RFFIObjectHandle out = NULL;
  RFFIByteArray s = ba_of("not an int");
  memset(&result, 0, sizeof(result));

  /* Wrong argument type: kind, function, position, expected and actual type. */
  CHECK(RFFIStringFromByteArray(&s, &args[0]) == 0);
  CHECK(RFFIFunctionCall(add_one, args, 1, &result) == -1);
  expect_error("TypeError",
               "Mismatched type on argument #0 when calling `testing.add_one`: expected int but got str");
  RFFIObjectDecRef(args[0].v.v_obj);
  /* Wrong count. */
  args[0] = int_any(1);
  args[1] = int_any(2);
  CHECK(RFFIFunctionCall(add_one, args, 2, &result) == -1);
  expect_error("TypeError", "`testing.add_one` expects 1 argument but 2 were given");
  /* NULL and non-function handles. */
  CHECK(RFFIFunctionCall(NULL, args, 0, &result) == -1);
  expect_error("ValueError", "`func` is NULL");
  CHECK(RFFIFunctionCall(add_one, NULL, 1, &result) == -1);
  expect_error("ValueError", "`args` is NULL");
  CHECK(RFFIFunctionCall(add_one, args, 1, NULL) == -1);
  expect_error("ValueError", "`result` is NULL");
  CHECK(RFFIFunctionCall(add_one, args, -1, &result) == -1);
  expect_error("ValueError", "negative");
  {
    RFFIObjectHandle names = NULL;
    CHECK(RFFIFunctionListGlobalNames(&names) == 0);
    CHECK(RFFIFunctionCall(names, args, 0, &result) == -1);
    expect_error("TypeError", "must be a function (ffi.Function) but is ffi.Array");
    CHECK(RFFIFunctionSetGlobal(&s, names, 0) == -1);
    expect_error("TypeError", "`func` must be a function");
    CHECK(RFFIObjectDecRef(names) == 0);
  }
  CHECK(RFFIObjectIncRef(NULL) == -1);
  expect_error("ValueError", "RFFIObjectIncRef: `obj` is NULL");
  /* Unknown names are not errors: the lookup gives NULL. */
  CHECK(get_global("no.such.function") == NULL);
  CHECK(RFFIFunctionGetGlobal(NULL, &out) == -1);
  expect_error("ValueError", "`name` is NULL");
  CHECK(RFFIFunctionGetGlobal(&s, NULL) == -1);
  expect_error("ValueError", "`out` is NULL");
  /* Invalid UTF-8 names cannot be registered. */
  {
    RFFIByteArray bad = ba_of("bad\xff\xfename");
    CHECK(RFFIFunctionSetGlobal(&bad, add_one, 0) == -1);
    expect_error("ValueError", "not valid UTF-8");
  }
  /* A byte array with NULL data but a size, and an impossible size. */
  {
    RFFIByteArray bad;
    bad.data = NULL;
    bad.size = 4;
    CHECK(RFFIFunctionGetGlobal(&bad, &out) == -1);
    expect_error("ValueError", "NULL data and size 4");
    bad.data = "x";
    bad.size = (size_t)-1;
    CHECK(RFFIFunctionGetGlobal(&bad, &out) == -1);
    expect_error("ValueError", "impossible size");
  }
  /* Bad dtype strings quote the input. */
  {
    DLDataType dt;
    RFFIByteArray bad = ba_of("floaty32");
    CHECK(RFFIDataTypeFromString(&bad, &dt) == -1);
    expect_error("ValueError", "floaty32");
  }
  /* Raising an error that is not an Error object is itself reported. */
  RFFIErrorSetRaised(add_one);
  expect_error("TypeError", "must be an Error");
  CHECK(RFFIObjectDecRef(add_one) == 0);
}

static void test_values(void) {
  RFFIAny a, b, view;
  RFFIByteArray seven = ba_of("abcdefg"), eight = ba_of("abcdefgh");
  RFFIByteArray nul;
  DLDataType dt;
  RFFIByteArray f32 = ba_of("float32x4");
  CHECK(RFFIStringFromByteArray(&seven, &a) == 0);
  CHECK(a.type_index == kRFFISmallStr && a.small_str_len == 7);
  CHECK(memcmp(a.v.v_bytes, "abcdefg", 8) == 0); /* NUL-terminated in place */
  CHECK(RFFIStringFromByteArray(&eight, &b) == 0);
  CHECK(b.type_index == kRFFIStr);
  {
    RFFIStrCell* cell = (RFFIStrCell*)((char*)b.v.v_obj + sizeof(RFFIObject));
    CHECK(cell->size == 8 && memcmp(cell->data, "abcdefgh", 9) == 0);
  }
  CHECK(RFFIObjectDecRef(b.v.v_obj) == 0);
  nul.data = "a\0b\0c\0d\0e";
  nul.size = 9;
  CHECK(RFFIBytesFromByteArray(&nul, &b) == 0);
  CHECK(b.type_index == kRFFIBytes);
  {
    RFFIStrCell* cell = (RFFIStrCell*)((char*)b.v.v_obj + sizeof(RFFIObject));
    CHECK(cell->size == 9 && memcmp(cell->data, "a\0b\0c\0d\0e", 9) == 0);
  }
  CHECK(RFFIObjectDecRef(b.v.v_obj) == 0);

  CHECK(RFFIDataTypeFromString(&f32, &dt) == 0);
  CHECK(dt.code == kDLFloat && dt.bits == 32 && dt.lanes == 4);
  CHECK(RFFIDataTypeToString(&dt, &a) == 0);
  CHECK(a.type_index == kRFFIStr || a.type_index == kRFFISmallStr);
  if (a.type_index == kRFFIStr) {
    RFFIStrCell* cell = (RFFIStrCell*)((char*)a.v.v_obj + sizeof(RFFIObject));
    CHECK(ba_equals(*cell, "float32x4"));
    RFFIObjectDecRef(a.v.v_obj);
  }
  /* A raw C string view becomes an owned string. */
  memset(&view, 0, sizeof(view));
  view.type_index = kRFFIRawStr;
  view.v.v_c_str = "a raw string longer than seven";
  CHECK(RFFIAnyViewToOwnedAny(&view, &a) == 0);
  CHECK(a.type_index == kRFFIStr);
  {
    int32_t count = 0;
    RFFIObjectHandle use_count = get_global("testing.object_use_count");
    RFFIAny r;
    memset(&r, 0, sizeof(r));
    CHECK(RFFIFunctionCall(use_count, &a, 1, &r) == 0);
    CHECK(r.type_index == kRFFIInt && r.v.v_int64 == 1);
    count = (int32_t)(((RFFIObject*)a.v.v_obj)->combined_ref_count & 0xffffffffu);
    CHECK(count == 1);
    RFFIObjectDecRef(use_count);
  }
  CHECK(RFFIObjectDecRef(a.v.v_obj) == 0);
  {
    int32_t idx = -1;
    RFFIByteArray key = ba_of("ffi.Function"), unknown = ba_of("no.such.Type"), dyn = ba_of("c_test.MyType");
    CHECK(RFFITypeKeyToIndex(&key, &idx) == 0 && idx == kRFFIFunction);
    CHECK(RFFITypeKeyToIndex(&unknown, &idx) == -1);
    expect_error("KeyError", "no.such.Type");
    CHECK(RFFITypeRegisterKey(&dyn, &idx) == 0 && idx >= kRFFIDynObjectBegin);
    {
      int32_t again = -1;
      CHECK(RFFITypeKeyToIndex(&dyn, &again) == 0 && again == idx);
    }
  }
}

int main(void) {
  test_version();
  test_callback_registered_and_called();
  test_rust_function_and_errors();
  test_bad_input();
  test_values();
  return finish("test_core");
}
