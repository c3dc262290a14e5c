/* Every exported C function called with the bad inputs a careless or hostile
 * caller can pass: NULL pointers, wrong object types, out-of-range numbers, malformed values and
 * names. Each must fail cleanly, as -1 with an error of the documented kind naming the function
 * and the argument (or, for the few functions without a status, in the documented way), and
 * never crash or leak. docs/RELIABILITY.md lists these cases function by function. */
#include <stdint.h>
#include <stdlib.h>
#include "rffi/c_api.h"
#include "check.h"

/* `call` fails with -1 and an error of `kind` whose message contains `needle`. */
#define FAILS(call, kind, needle)    \
  do {                               \
    CHECK((call) == -1);             \
    expect_error((kind), (needle));  \
  } while (0)

static int noop_call(void* self, const RFFIAny* args, int32_t n, RFFIAny* result) {
  (void)self;
  (void)args;
  (void)n;
  (void)result;
  return 0;
}

static RFFIByteArray bytes_of(const char* data, size_t size) {
  RFFIByteArray b;
  b.data = data;
  b.size = size;
  return b;
}

/* An object of the wrong type for every "must be a X" check: a function. */
static RFFIObjectHandle not_the_right_type(void) {
  RFFIObjectHandle f = NULL;
  CHECK(RFFIFunctionCreate(NULL, noop_call, NULL, &f) == 0);
  return f;
}

static const char kNotUtf8[] = {'a', (char)0xff, 'b'};
static const char kWithNul[] = {'a', '\0', 'b'};

static void test_errors(void) {
  RFFIObjectHandle wrong = not_the_right_type(), err = (RFFIObjectHandle)1;
  RFFIByteArray kind = ba_of("ValueError"), msg = ba_of("m"), out;
  RFFIByteArray empty = ba_of(""), with_nul = bytes_of(kWithNul, 3);
  RFFIByteArray not_utf8 = bytes_of(kNotUtf8, 3), null_data = bytes_of(NULL, 4);
  const char* parts[3] = {"a", NULL, "c"};

  RFFIErrorSetRaised(NULL);
  expect_error("ValueError", "RFFIErrorSetRaised: `error` is NULL");
  RFFIErrorSetRaised(wrong);
  expect_error("TypeError", "RFFIErrorSetRaised: `error` must be an Error (ffi.Error) but is ffi.Function");

  RFFIErrorSetRaisedFromCStr(NULL, NULL);
  expect_error("RuntimeError", "");
  RFFIErrorSetRaisedFromCStr("", "empty kind");
  expect_error("RuntimeError", "empty kind");

  RFFIErrorSetRaisedFromCStrParts("KeyError", parts, 3);
  expect_error("KeyError", "ac");
  RFFIErrorSetRaisedFromCStrParts(NULL, NULL, 5);
  expect_error("RuntimeError", "");
  RFFIErrorSetRaisedFromCStrParts("KeyError", parts, -4);
  expect_error("KeyError", "");

  RFFIErrorMoveFromRaised(&err);
  CHECK(err == NULL); /* nothing raised */
  RFFIErrorSetRaisedFromCStr("KeyError", "dropped");
  RFFIErrorMoveFromRaised(NULL); /* drops it */
  RFFIErrorMoveFromRaised(&err);
  CHECK(err == NULL);

  FAILS(RFFIErrorCreate(NULL, &msg, NULL, &err), "ValueError", "RFFIErrorCreate: `kind` is NULL");
  FAILS(RFFIErrorCreate(&kind, NULL, NULL, &err), "ValueError", "`message` is NULL");
  FAILS(RFFIErrorCreate(&kind, &msg, NULL, NULL), "ValueError", "`out` is NULL");
  FAILS(RFFIErrorCreate(&empty, &msg, NULL, &err), "ValueError", "an error kind must not be empty");
  FAILS(RFFIErrorCreate(&with_nul, &msg, NULL, &err), "ValueError", "contains a NUL byte (at 1)");
  FAILS(RFFIErrorCreate(&not_utf8, &msg, NULL, &err), "ValueError", "`kind` is not valid UTF-8");
  FAILS(RFFIErrorCreate(&null_data, &msg, NULL, &err), "ValueError", "`kind` has NULL data and size 4");
  FAILS(RFFIErrorCreate(&kind, &msg, &not_utf8, &err), "ValueError", "`backtrace` is not valid UTF-8");

  FAILS(RFFIErrorGetKind(NULL, &out), "ValueError", "RFFIErrorGetKind: `error` is NULL");
  FAILS(RFFIErrorGetKind(wrong, &out), "TypeError", "RFFIErrorGetKind: `error` must be an Error (ffi.Error) but is ffi.Function");
  FAILS(RFFIErrorGetMessage(NULL, &out), "ValueError", "RFFIErrorGetMessage: `error` is NULL");
  FAILS(RFFIErrorGetMessage(wrong, &out), "TypeError", "must be an Error (ffi.Error)");
  FAILS(RFFIErrorGetBacktrace(NULL, &out), "ValueError", "RFFIErrorGetBacktrace: `error` is NULL");
  FAILS(RFFIErrorGetBacktrace(wrong, &out), "TypeError", "must be an Error (ffi.Error)");
  CHECK(RFFIErrorCreate(&kind, &msg, NULL, &err) == 0);
  FAILS(RFFIErrorGetKind(err, NULL), "ValueError", "`out` is NULL");
  FAILS(RFFIErrorGetMessage(err, NULL), "ValueError", "`out` is NULL");
  FAILS(RFFIErrorGetBacktrace(err, NULL), "ValueError", "`out` is NULL");
  RFFIObjectDecRef(err);
  RFFIObjectDecRef(wrong);
}

static void test_functions(void) {
  RFFIObjectHandle f = NULL, wrong = NULL, out = NULL;
  RFFIByteArray name = ba_of("bad_inputs.f"), empty = ba_of(""), with_nul = bytes_of(kWithNul, 3);
  RFFIByteArray not_utf8 = bytes_of(kNotUtf8, 3), null_data = bytes_of(NULL, 2);
  RFFIByteArray huge = bytes_of("x", (size_t)-1);
  RFFIAny args[1], result;
  struct {
    RFFICallFrame frame;
    RFFIAny args[1];
  } call;
  int32_t prev;
  RFFIByteArray key = ba_of("bad_inputs.type");
  int32_t index;
  memset(&result, 0, sizeof(result));
  args[0] = int_any(1);

  FAILS(RFFIFunctionCreate(NULL, NULL, NULL, &f), "ValueError", "RFFIFunctionCreate: `safe_call` is NULL");
  FAILS(RFFIFunctionCreate(NULL, noop_call, NULL, NULL), "ValueError", "`out` is NULL");
  CHECK(RFFIFunctionCreate(NULL, noop_call, NULL, &f) == 0);
  CHECK(RFFITypeRegisterKey(&key, &index) == 0);
  CHECK(RFFIObjectCreateOpaque(NULL, index, NULL, &wrong) == 0);

  FAILS(RFFIFunctionCall(NULL, args, 1, &result), "ValueError", "RFFIFunctionCall: `func` is NULL");
  FAILS(RFFIFunctionCall(f, args, 1, NULL), "ValueError", "`result` is NULL");
  FAILS(RFFIFunctionCall(f, args, -1, &result), "ValueError", "`num_args` is negative (-1)");
  FAILS(RFFIFunctionCall(f, NULL, 2, &result), "ValueError", "`args` is NULL with num_args = 2");
  FAILS(RFFIFunctionCall(wrong, args, 1, &result), "TypeError", "`func` must be a function (ffi.Function) but is bad_inputs.type");

  memset(&call, 0, sizeof(call));
  FAILS(RFFIFunctionCallFrame(NULL), "ValueError", "`frame` is NULL");
  FAILS(RFFIFunctionCallFrame(&call.frame), "ValueError", "`func` is NULL");
  call.frame.func = f;
  call.frame.num_args = -3;
  FAILS(RFFIFunctionCallFrame(&call.frame), "ValueError", "`num_args` is negative (-3)");
  call.frame.func = wrong;
  call.frame.num_args = 1;
  call.args[0] = int_any(1);
  FAILS(RFFIFunctionCallFrame(&call.frame), "TypeError", "must be a function");

  FAILS(RFFIFunctionGetGlobal(NULL, &out), "ValueError", "RFFIFunctionGetGlobal: `name` is NULL");
  FAILS(RFFIFunctionGetGlobal(&name, NULL), "ValueError", "`out` is NULL");
  FAILS(RFFIFunctionGetGlobal(&null_data, &out), "ValueError", "`name` has NULL data and size 2");
  FAILS(RFFIFunctionGetGlobal(&huge, &out), "ValueError", "`name` has an impossible size");
  CHECK(RFFIFunctionGetGlobal(&with_nul, &out) == 0 && out == NULL); /* not found */

  FAILS(RFFIFunctionSetGlobal(NULL, f, 0), "ValueError", "RFFIFunctionSetGlobal: `name` is NULL");
  FAILS(RFFIFunctionSetGlobal(&name, NULL, 0), "ValueError", "`func` is NULL");
  FAILS(RFFIFunctionSetGlobal(&name, wrong, 0), "TypeError", "`func` must be a function");
  FAILS(RFFIFunctionSetGlobal(&empty, f, 0), "ValueError", "a global function name must not be empty");
  FAILS(RFFIFunctionSetGlobal(&with_nul, f, 0), "ValueError", "a global function name \"a\\0b\" contains a NUL byte (at 1)");
  FAILS(RFFIFunctionSetGlobal(&not_utf8, f, 0), "ValueError", "not valid UTF-8");
  CHECK(RFFIFunctionSetGlobal(&name, f, 0) == 0);
  FAILS(RFFIFunctionSetGlobal(&name, f, 0), "KeyError", "`bad_inputs.f` is already registered");

  FAILS(RFFIFunctionRemoveGlobal(NULL), "ValueError", "RFFIFunctionRemoveGlobal: `name` is NULL");
  CHECK(RFFIFunctionRemoveGlobal(&name) == 0);
  FAILS(RFFIFunctionRemoveGlobal(&name), "KeyError", "no global function named `bad_inputs.f`");
  FAILS(RFFIFunctionListGlobalNames(NULL), "ValueError", "RFFIFunctionListGlobalNames: `out` is NULL");

  FAILS(RFFISetMaxCallDepth(0, &prev), "ValueError", "not 0");
  FAILS(RFFISetMaxCallDepth(-1, NULL), "ValueError", "not -1");
  FAILS(RFFISetMaxCallDepth(INT32_MIN, NULL), "ValueError", "not -2147483648");
  RFFIObjectDecRef(wrong);
  RFFIObjectDecRef(f);
}

static void test_modules(void) {
  RFFIObjectHandle wrong = not_the_right_type(), out = NULL;
  RFFIByteArray path = ba_of("/no/such/plugin.so"), name = ba_of("f"), not_utf8 = bytes_of(kNotUtf8, 3);
  FAILS(RFFIModuleLoadFromFile(NULL, &out), "ValueError", "RFFIModuleLoadFromFile: `path` is NULL");
  FAILS(RFFIModuleLoadFromFile(&path, NULL), "ValueError", "`out` is NULL");
  FAILS(RFFIModuleLoadFromFile(&path, &out), "ValueError", "cannot load module `/no/such/plugin.so`");
  FAILS(RFFIModuleLoadFromFile(&not_utf8, &out), "ValueError", "`path` is not valid UTF-8");
  FAILS(RFFIModuleGetFunction(NULL, &name, &out), "ValueError", "RFFIModuleGetFunction: `module` is NULL");
  FAILS(RFFIModuleGetFunction(wrong, &name, &out), "TypeError", "`module` must be a module (ffi.Module) but is ffi.Function");
  FAILS(RFFIModuleGetFunction(wrong, &name, NULL), "ValueError", "`out` is NULL");
  FAILS(RFFIModuleListFunctions(NULL, &out), "ValueError", "RFFIModuleListFunctions: `module` is NULL");
  FAILS(RFFIModuleListFunctions(wrong, &out), "TypeError", "must be a module");
  FAILS(RFFIModuleListFunctions(wrong, NULL), "ValueError", "`out` is NULL");
  RFFIObjectDecRef(wrong);
}

static int g_opaque_deleted = 0;
static void opaque_deleter(void* p) {
  (void)p;
  ++g_opaque_deleted;
}

static void test_objects_and_types(void) {
  RFFIObjectHandle out = NULL;
  RFFIByteArray key = ba_of("no.such.type"), empty = ba_of(""), with_nul = bytes_of(kWithNul, 3);
  RFFIByteArray not_utf8 = bytes_of(kNotUtf8, 3), k;
  int32_t index = 0;
  RFFIGetVersion(NULL); /* ignored */
  FAILS(RFFIObjectIncRef(NULL), "ValueError", "RFFIObjectIncRef: `obj` is NULL");
  FAILS(RFFIObjectDecRef(NULL), "ValueError", "RFFIObjectDecRef: `obj` is NULL");

  FAILS(RFFITypeKeyToIndex(NULL, &index), "ValueError", "RFFITypeKeyToIndex: `type_key` is NULL");
  FAILS(RFFITypeKeyToIndex(&key, NULL), "ValueError", "`out` is NULL");
  FAILS(RFFITypeKeyToIndex(&key, &index), "KeyError", "no.such.type");
  FAILS(RFFITypeKeyToIndex(&with_nul, &index), "KeyError", "");

  FAILS(RFFITypeRegisterKey(NULL, &index), "ValueError", "RFFITypeRegisterKey: `type_key` is NULL");
  FAILS(RFFITypeRegisterKey(&key, NULL), "ValueError", "`out` is NULL");
  FAILS(RFFITypeRegisterKey(&empty, &index), "ValueError", "a type key must not be empty");
  FAILS(RFFITypeRegisterKey(&with_nul, &index), "ValueError", "contains a NUL byte (at 1)");
  FAILS(RFFITypeRegisterKey(&not_utf8, &index), "ValueError", "not valid UTF-8");

  FAILS(RFFIObjectCreateOpaque(NULL, kRFFIInt, opaque_deleter, &out), "ValueError", "type index 1 is not an opaque type");
  FAILS(RFFIObjectCreateOpaque(NULL, kRFFIStr, opaque_deleter, &out), "ValueError", "type index 65 is not an opaque type");
  FAILS(RFFIObjectCreateOpaque(NULL, -9, opaque_deleter, &out), "ValueError", "type index -9 is not an opaque type");
  FAILS(RFFIObjectCreateOpaque(NULL, 1000000, opaque_deleter, &out), "KeyError", "type index 1000000 was never registered");
  FAILS(RFFIObjectCreateOpaque(NULL, INT32_MAX, opaque_deleter, &out), "KeyError", "never registered");
  FAILS(RFFIObjectCreateOpaque(NULL, kRFFIOpaquePyObject, opaque_deleter, NULL), "ValueError", "`out` is NULL");
  CHECK(g_opaque_deleted == 0); /* a refused handle stays the caller's */

  FAILS(RFFITypeIndexToKey(-7, &k), "KeyError", "RFFITypeIndexToKey: unknown type index -7");
  FAILS(RFFITypeIndexToKey(1000000, &k), "KeyError", "unknown type index 1000000");
  FAILS(RFFITypeIndexToKey(kRFFIInt, NULL), "ValueError", "`out` is NULL");
}

/* ---- Tensors ---- */

static int g_tensor_deleted = 0;
static float g_data[16];
static int64_t g_shape[2];
static int64_t g_strides[2];

static void versioned_deleter(DLManagedTensorVersioned* self) {
  (void)self;
  ++g_tensor_deleted;
}
static void legacy_deleter(DLManagedTensor* self) {
  (void)self;
  ++g_tensor_deleted;
}

static DLTensor good_dl(void) {
  DLTensor t;
  memset(&t, 0, sizeof(t));
  t.data = g_data;
  t.device.device_type = kDLCPU;
  t.ndim = 2;
  t.dtype.code = kDLFloat;
  t.dtype.bits = 32;
  t.dtype.lanes = 1;
  g_shape[0] = 2;
  g_shape[1] = 3;
  t.shape = g_shape;
  t.strides = NULL;
  return t;
}

/* Imports `m` (versioned), expects a ValueError containing `needle` and one deleter call. */
static void versioned_refused(DLManagedTensorVersioned* m, const char* needle) {
  RFFIObjectHandle out = NULL;
  int before = g_tensor_deleted;
  m->version.major = DLPACK_MAJOR_VERSION;
  m->deleter = versioned_deleter;
  FAILS(RFFITensorFromDLPackVersioned(m, 0, 0, &out), "ValueError", needle);
  CHECK(g_tensor_deleted == before + 1);
}

static void test_tensor_import(void) {
  DLManagedTensorVersioned m;
  DLManagedTensor legacy;
  RFFIObjectHandle out = NULL;
  int before;
  FAILS(RFFITensorFromDLPackVersioned(NULL, 0, 0, &out), "ValueError", "`from` is NULL");
  FAILS(RFFITensorFromDLPack(NULL, 0, 0, &out), "ValueError", "`from` is NULL");

  memset(&m, 0, sizeof(m));
  m.dl_tensor = good_dl();
  before = g_tensor_deleted;
  m.deleter = versioned_deleter;
  FAILS(RFFITensorFromDLPackVersioned(&m, 0, 0, NULL), "ValueError", "`out` is NULL");
  CHECK(g_tensor_deleted == before + 1); /* taken over even then */

  m.dl_tensor = good_dl();
  m.dl_tensor.ndim = -1;
  versioned_refused(&m, "`dl_tensor.ndim` is negative (-1)");
  m.dl_tensor = good_dl();
  m.dl_tensor.data = NULL;
  versioned_refused(&m, "`dl_tensor.data` is NULL but the tensor has 6 elements");
  m.dl_tensor = good_dl();
  m.dl_tensor.shape = NULL;
  versioned_refused(&m, "`dl_tensor.shape` is NULL with ndim 2");
  m.dl_tensor = good_dl();
  g_shape[1] = -3;
  versioned_refused(&m, "`dl_tensor.shape[1]` is negative (-3)");
  m.dl_tensor = good_dl();
  m.dl_tensor.dtype.bits = 7;
  versioned_refused(&m, "float has no 7-bit form");
  m.dl_tensor = good_dl();
  m.dl_tensor.dtype.lanes = 0;
  versioned_refused(&m, "lanes is 0");
  m.dl_tensor = good_dl();
  m.dl_tensor.device.device_type = 99;
  versioned_refused(&m, "unknown device type 99");
  m.dl_tensor = good_dl();
  m.dl_tensor.strides = g_strides;
  g_strides[0] = INT64_MIN;
  g_strides[1] = 1;
  versioned_refused(&m, "`dl_tensor.strides[0]` (-9223372036854775808) over `dl_tensor.shape[0]` (2)");
  m.dl_tensor = good_dl();
  m.dl_tensor.strides = g_strides;
  g_strides[0] = 1;
  g_strides[1] = ((int64_t)1 << 62) - 1;
  versioned_refused(&m, "`dl_tensor.strides[1]` (4611686018427387903) over `dl_tensor.shape[1]` (3) reaches more than 2^63-1 bytes");
  m.dl_tensor = good_dl();
  g_shape[0] = (int64_t)1 << 40;
  g_shape[1] = (int64_t)1 << 40;
  versioned_refused(&m, "has more than 2^63-1 elements");
  m.dl_tensor = good_dl();
  m.dl_tensor.byte_offset = UINT64_MAX;
  versioned_refused(&m, "`dl_tensor.byte_offset` (18446744073709551615) is more than 2^63-1");
  m.dl_tensor = good_dl();
  m.flags = (uint64_t)1 << 40;
  versioned_refused(&m, "`flags` (0x10000000000) has bits DLPack does not define");
  m.flags = DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED;
  versioned_refused(&m, "DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED");
  m.flags = 0;
  m.version.major = DLPACK_MAJOR_VERSION + 1;
  m.deleter = versioned_deleter;
  before = g_tensor_deleted;
  FAILS(RFFITensorFromDLPackVersioned(&m, 0, 0, &out), "ValueError", "unsupported DLPack version");
  CHECK(g_tensor_deleted == before + 1);

  /* Legacy: the same checks. */
  memset(&legacy, 0, sizeof(legacy));
  legacy.dl_tensor = good_dl();
  legacy.dl_tensor.strides = g_strides;
  g_strides[0] = INT64_MAX;
  g_strides[1] = 1;
  legacy.deleter = legacy_deleter;
  before = g_tensor_deleted;
  FAILS(RFFITensorFromDLPack(&legacy, 0, 0, &out), "ValueError", "`dl_tensor.strides[0]`");
  CHECK(g_tensor_deleted == before + 1);
  legacy.dl_tensor = good_dl();
  FAILS(RFFITensorFromDLPack(&legacy, 0, 0, NULL), "ValueError", "`out` is NULL");
  CHECK(g_tensor_deleted == before + 2);
  /* Import options. */
  legacy.dl_tensor = good_dl();
  legacy.dl_tensor.byte_offset = 2;
  FAILS(RFFITensorFromDLPack(&legacy, 64, 0, &out), "ValueError", "is not aligned to 64 bytes");
  legacy.dl_tensor = good_dl();
  legacy.dl_tensor.strides = g_strides;
  g_strides[0] = 1;
  g_strides[1] = 2;
  FAILS(RFFITensorFromDLPack(&legacy, 0, 1, &out), "ValueError", "is not contiguous");
  CHECK(g_tensor_deleted == before + 4);
}

static void test_tensor_export_and_alloc(void) {
  RFFIObjectHandle wrong = not_the_right_type(), out = NULL;
  DLManagedTensor* legacy = NULL;
  DLManagedTensorVersioned* versioned = NULL;
  int64_t shape[2] = {2, 3}, neg[1] = {-1}, huge[2] = {(int64_t)1 << 40, (int64_t)1 << 40};
  DLDataType f32, bad_width, zero_lanes;
  DLDevice cpu, bad_device;
  DLTensor proto;
  f32.code = kDLFloat;
  f32.bits = 32;
  f32.lanes = 1;
  bad_width = f32;
  bad_width.bits = 24;
  zero_lanes = f32;
  zero_lanes.lanes = 0;
  cpu.device_type = kDLCPU;
  cpu.device_id = 0;
  bad_device.device_type = 1234;
  bad_device.device_id = 0;

  FAILS(RFFITensorToDLPack(NULL, &legacy), "ValueError", "RFFITensorToDLPack: `from` is NULL");
  FAILS(RFFITensorToDLPack(wrong, &legacy), "TypeError", "must be a tensor");
  FAILS(RFFITensorToDLPackVersioned(NULL, &versioned), "ValueError", "`from` is NULL");
  FAILS(RFFITensorToDLPackVersioned(wrong, &versioned), "TypeError", "must be a tensor");
  CHECK(RFFITensorGetDLTensorPtr(NULL) == NULL);
  expect_error("ValueError", "RFFITensorGetDLTensorPtr: `obj` is NULL");
  CHECK(RFFITensorGetDLTensorPtr(wrong) == NULL);
  expect_error("TypeError", "RFFITensorGetDLTensorPtr");

  CHECK(RFFITensorAlloc(shape, 2, f32, cpu, &out) == 0);
  FAILS(RFFITensorToDLPack(out, NULL), "ValueError", "`out` is NULL");
  FAILS(RFFITensorToDLPackVersioned(out, NULL), "ValueError", "`out` is NULL");
  RFFIObjectDecRef(out);

  FAILS(RFFITensorAlloc(shape, 2, f32, cpu, NULL), "ValueError", "RFFITensorAlloc: `out` is NULL");
  FAILS(RFFITensorAlloc(shape, -1, f32, cpu, &out), "ValueError", "`ndim` is negative (-1)");
  FAILS(RFFITensorAlloc(NULL, 2, f32, cpu, &out), "ValueError", "`shape` is NULL");
  FAILS(RFFITensorAlloc(neg, 1, f32, cpu, &out), "ValueError", "negative");
  FAILS(RFFITensorAlloc(huge, 2, f32, cpu, &out), "ValueError", "more than 2^63-1");
  FAILS(RFFITensorAlloc(shape, 2, bad_width, cpu, &out), "ValueError", "float has no 24-bit form");
  FAILS(RFFITensorAlloc(shape, 2, zero_lanes, cpu, &out), "ValueError", "lanes is 0");
  FAILS(RFFITensorAlloc(shape, 2, f32, bad_device, &out), "ValueError", "`device` is rejected");

  FAILS(RFFIEnvTensorAlloc(NULL, &out), "ValueError", "RFFIEnvTensorAlloc: `prototype` is NULL");
  memset(&proto, 0, sizeof(proto));
  proto.ndim = 2;
  proto.shape = shape;
  proto.dtype = f32;
  proto.device = cpu;
  FAILS(RFFIEnvTensorAlloc(&proto, NULL), "ValueError", "`out` is NULL");
  proto.ndim = -2;
  FAILS(RFFIEnvTensorAlloc(&proto, &out), "ValueError", "negative");
  proto.ndim = 2;
  proto.shape = NULL;
  FAILS(RFFIEnvTensorAlloc(&proto, &out), "ValueError", "`prototype.shape` is NULL with ndim 2");
  proto.shape = shape;
  proto.dtype = bad_width;
  FAILS(RFFIEnvTensorAlloc(&proto, &out), "ValueError", "float has no 24-bit form");
  RFFIObjectDecRef(wrong);
}

/* An allocator that fails with an empty message: the error names it (by symbol, so not static:
 * the program is linked with -rdynamic). */
int32_t empty_message_allocator(DLTensor* prototype, DLManagedTensorVersioned** out,
                                void* error_ctx, RFFIDLPackSetError set_error);
int32_t silent_allocator(DLTensor* prototype, DLManagedTensorVersioned** out, void* error_ctx,
                         RFFIDLPackSetError set_error);

int32_t empty_message_allocator(DLTensor* prototype, DLManagedTensorVersioned** out,
                                       void* error_ctx, RFFIDLPackSetError set_error) {
  (void)prototype;
  (void)out;
  set_error(error_ctx, "MemoryError", "");
  return -1;
}

int32_t silent_allocator(DLTensor* prototype, DLManagedTensorVersioned** out,
                                void* error_ctx, RFFIDLPackSetError set_error) {
  (void)prototype;
  (void)out;
  (void)error_ctx;
  (void)set_error;
  return 7;
}

static void test_environment(void) {
  void* prev = (void*)1;
  RFFIObjectHandle out = NULL;
  RFFIDLPackManagedTensorAllocator original = NULL;
  int64_t shape[1] = {4};
  DLDataType f32;
  DLDevice cpu;
  f32.code = kDLFloat;
  f32.bits = 32;
  f32.lanes = 1;
  cpu.device_type = kDLCPU;
  cpu.device_id = 0;
  FAILS(RFFIEnvSetStream(1234, 0, NULL, &prev), "ValueError", "RFFIEnvSetStream");
  FAILS(RFFIEnvSetStream(kDLCUDA, -1, NULL, NULL), "ValueError", "RFFIEnvSetStream");
  CHECK(RFFIEnvGetStream(1234, 0) == NULL);
  CHECK(RFFIEnvGetStream(kDLCUDA, -5) == NULL);

  CHECK(RFFIEnvGetDLPackManagedTensorAllocator() == NULL);
  CHECK(RFFIEnvSetDLPackManagedTensorAllocator(empty_message_allocator, 0, &original) == 0);
  CHECK(original == NULL);
  FAILS(RFFITensorAlloc(shape, 1, f32, cpu, &out), "MemoryError",
        "the environment allocator `empty_message_allocator` (0x");
  CHECK(RFFITensorAlloc(shape, 1, f32, cpu, &out) == -1);
  expect_error("MemoryError", ") failed (returned -1) and reported a MemoryError with an empty message");
  CHECK(RFFIEnvSetDLPackManagedTensorAllocator(silent_allocator, 0, NULL) == 0);
  FAILS(RFFITensorAlloc(shape, 1, f32, cpu, &out), "RuntimeError",
        "the environment allocator `silent_allocator` (0x");
  CHECK(RFFIEnvSetDLPackManagedTensorAllocator(NULL, 0, NULL) == 0);
  CHECK(RFFIEnvGetDLPackManagedTensorAllocator() == NULL);
}

static void test_values(void) {
  RFFIAny out, view;
  RFFIByteArray not_utf8 = bytes_of(kNotUtf8, 3), null_data = bytes_of(NULL, 9);
  RFFIByteArray empty = ba_of(""), int7 = ba_of("int7"), zero_lanes = ba_of("float32x0"), s = ba_of("x");
  DLDataType dt, invalid;
  memset(&out, 0, sizeof(out));
  FAILS(RFFIStringFromByteArray(NULL, &out), "ValueError", "RFFIStringFromByteArray: `input` is NULL");
  FAILS(RFFIStringFromByteArray(&s, NULL), "ValueError", "`out` is NULL");
  FAILS(RFFIStringFromByteArray(&not_utf8, &out), "ValueError", "not valid UTF-8");
  FAILS(RFFIStringFromByteArray(&null_data, &out), "ValueError", "has NULL data and size 9");
  FAILS(RFFIBytesFromByteArray(NULL, &out), "ValueError", "RFFIBytesFromByteArray: `input` is NULL");
  FAILS(RFFIBytesFromByteArray(&s, NULL), "ValueError", "`out` is NULL");
  FAILS(RFFIBytesFromByteArray(&null_data, &out), "ValueError", "has NULL data and size 9");

  FAILS(RFFIDataTypeFromString(NULL, &dt), "ValueError", "RFFIDataTypeFromString: `input` is NULL");
  FAILS(RFFIDataTypeFromString(&s, NULL), "ValueError", "`out` is NULL");
  FAILS(RFFIDataTypeFromString(&empty, &dt), "ValueError", "empty string");
  FAILS(RFFIDataTypeFromString(&int7, &dt), "ValueError", "int has no 7-bit form");
  FAILS(RFFIDataTypeFromString(&zero_lanes, &dt), "ValueError", "lanes must be in 1..=65535");
  FAILS(RFFIDataTypeFromString(&not_utf8, &dt), "ValueError", "not valid UTF-8");
  invalid.code = 99;
  invalid.bits = 8;
  invalid.lanes = 1;
  FAILS(RFFIDataTypeToString(NULL, &out), "ValueError", "RFFIDataTypeToString: `dtype` is NULL");
  FAILS(RFFIDataTypeToString(&invalid, &out), "ValueError", "unknown type code 99");
  invalid.code = kDLBfloat;
  FAILS(RFFIDataTypeToString(&invalid, &out), "ValueError", "bfloat has no 8-bit form");
  FAILS(RFFIDataTypeToString(&invalid, NULL), "ValueError", "`out` is NULL");

  FAILS(RFFIAnyViewToOwnedAny(NULL, &out), "ValueError", "RFFIAnyViewToOwnedAny: `view` is NULL");
  view = int_any(1);
  FAILS(RFFIAnyViewToOwnedAny(&view, NULL), "ValueError", "`out` is NULL");
  memset(&view, 0, sizeof(view));
  view.type_index = kRFFIRawStr;
  FAILS(RFFIAnyViewToOwnedAny(&view, &out), "ValueError", "NULL pointer in a string");
  view.type_index = kRFFIByteArrayPtr;
  FAILS(RFFIAnyViewToOwnedAny(&view, &out), "ValueError", "NULL pointer in a string or byte-array");
  view.type_index = kRFFIObjectRValueRef;
  FAILS(RFFIAnyViewToOwnedAny(&view, &out), "ValueError", "NULL ObjectRValueRef");
  view.type_index = kRFFIStr;
  FAILS(RFFIAnyViewToOwnedAny(&view, &out), "ValueError", "type index 65 (ffi.String) with a NULL object pointer");
  view.type_index = kRFFISmallStr;
  view.small_str_len = 200;
  FAILS(RFFIAnyViewToOwnedAny(&view, &out), "ValueError", "a small string of length 200");
  view.small_str_len = 0;
  view.type_index = 40;
  FAILS(RFFIAnyViewToOwnedAny(&view, &out), "ValueError", "unknown type index 40");
  view.type_index = 5000;
  view.v.v_ptr = &view;
  FAILS(RFFIAnyViewToOwnedAny(&view, &out), "ValueError", "unknown type index 5000");
  view.type_index = kRFFIDLTensorPtr;
  FAILS(RFFIAnyViewToOwnedAny(&view, &out), "TypeError", "a borrowed DLTensor* cannot be stored");
}

int main(void) {
  test_errors();
  test_functions();
  test_modules();
  test_objects_and_types();
  test_tensor_import();
  test_tensor_export_and_alloc();
  test_environment();
  test_values();
  return finish("test_bad_inputs");
}
