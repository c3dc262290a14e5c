/* Tensors from C: a DLPack producer's tensor imported, passed through functions, exported back,
 * its deleter run exactly once; borrowed DLTensor* arguments; the read-only flag; bad input;
 * allocation with and without an environment allocator; streams. Built with -std=c99. */
#include <stdint.h>
#include <stdlib.h>
#include "rffi/c_api.h"
#include "check.h"

/* ---- A producer, as a framework would write one: one heap block per tensor. ---- */

typedef struct {
  DLManagedTensorVersioned managed; /* first: the deleter gets its address */
  DLManagedTensor legacy;
  int64_t shape[2];
  float data[6];
} Producer;

static int g_deleted = 0;

static void producer_deleter(DLManagedTensorVersioned* self) {
  ++g_deleted;
  free(self->manager_ctx);
}

static void producer_deleter_legacy(DLManagedTensor* self) {
  ++g_deleted;
  free(self->manager_ctx);
}

static DLDevice device(int32_t type, int32_t id) {
  DLDevice d;
  d.device_type = (DLDeviceType)type;
  d.device_id = id;
  return d;
}

static DLDataType float32(void) {
  DLDataType t;
  t.code = kDLFloat;
  t.bits = 32;
  t.lanes = 1;
  return t;
}

/* A 2x3 float32 CPU tensor holding 0..5, with NULL strides (compact). */
static Producer* make_producer(void) {
  Producer* p = (Producer*)calloc(1, sizeof(Producer));
  int i;
  p->shape[0] = 2;
  p->shape[1] = 3;
  for (i = 0; i < 6; ++i) p->data[i] = (float)i;
  p->managed.version.major = DLPACK_MAJOR_VERSION;
  p->managed.version.minor = DLPACK_MINOR_VERSION;
  p->managed.manager_ctx = p;
  p->managed.deleter = producer_deleter;
  p->managed.dl_tensor.data = p->data;
  p->managed.dl_tensor.device = device(kDLCPU, 0);
  p->managed.dl_tensor.ndim = 2;
  p->managed.dl_tensor.dtype = float32();
  p->managed.dl_tensor.shape = p->shape;
  p->managed.dl_tensor.strides = NULL;
  p->legacy.dl_tensor = p->managed.dl_tensor;
  p->legacy.manager_ctx = p;
  p->legacy.deleter = producer_deleter_legacy;
  return p;
}

/* ---- Helpers ---- */

/* Calls the global `name` with one argument; returns its status, result in *out. */
static int call1(const char* name, RFFIAny arg, RFFIAny* out) {
  RFFIObjectHandle f = get_global(name);
  int rc;
  memset(out, 0, sizeof(*out));
  rc = RFFIFunctionCall(f, &arg, 1, out);
  RFFIObjectDecRef(f);
  return rc;
}

/* ---- Tests ---- */

/* The scenario of the issue: import, echo, export back, deleter exactly once. */
static void test_import_echo_export(void) {
  Producer* p = make_producer();
  RFFIObjectHandle t = NULL;
  DLManagedTensorVersioned* out = NULL;
  DLTensor* dl;
  RFFIAny result;
  g_deleted = 0;

  CHECK(RFFITensorFromDLPackVersioned(&p->managed, 0, 0, &t) == 0);
  dl = RFFITensorGetDLTensorPtr(t);
  CHECK(dl == &((RFFITensorObject*)t)->dl_tensor);
  CHECK(dl->data == (void*)p->data); /* zero copy */
  CHECK(dl->ndim == 2 && dl->shape[0] == 2 && dl->shape[1] == 3);
  CHECK(dl->strides != NULL && dl->strides[0] == 3 && dl->strides[1] == 1);

  /* testing.echo gives back the same object with a new reference. */
  CHECK(call1("testing.echo", object_arg(t), &result) == 0);
  CHECK(result.type_index == kRFFITensor && (void*)result.v.v_obj == t);
  CHECK(RFFIObjectDecRef(result.v.v_obj) == 0);

  /* Export back: same data, this header's version, no flags. */
  CHECK(RFFITensorToDLPackVersioned(t, &out) == 0);
  CHECK(out != NULL && out->dl_tensor.data == (void*)p->data);
  CHECK(out->version.major == DLPACK_MAJOR_VERSION && out->version.minor == DLPACK_MINOR_VERSION);
  CHECK(out->flags == 0 && out->dl_tensor.strides[0] == 3);
  CHECK(((float*)out->dl_tensor.data)[5] == 5.0f);

  CHECK(RFFIObjectDecRef(t) == 0);
  CHECK(g_deleted == 0); /* the export still holds the tensor */
  out->deleter(out);
  CHECK(g_deleted == 1);
}

static void test_legacy_round_trip(void) {
  Producer* p = make_producer();
  RFFIObjectHandle t = NULL, t2 = NULL;
  DLManagedTensor* out = NULL;
  g_deleted = 0;
  CHECK(RFFITensorFromDLPack(&p->legacy, 0, 0, &t) == 0);
  CHECK(RFFITensorToDLPack(t, &out) == 0);
  CHECK(RFFIObjectDecRef(t) == 0);
  /* Import our own export: one buffer, still the producer's. */
  CHECK(RFFITensorFromDLPack(out, 16, 1, &t2) == 0);
  CHECK(RFFITensorGetDLTensorPtr(t2)->data == (void*)p->data);
  CHECK(g_deleted == 0);
  CHECK(RFFIObjectDecRef(t2) == 0);
  CHECK(g_deleted == 1);
}

/* A borrowed DLTensor* is accepted where a function takes a Tensor. */
static void test_dltensor_ptr_argument(void) {
  float data[6] = {0};
  int64_t shape[2] = {3, 2};
  DLTensor dl;
  RFFIAny arg, result;
  RFFIShapeCell* cell;
  dl.data = data;
  dl.device = device(kDLCPU, 0);
  dl.ndim = 2;
  dl.dtype = float32();
  dl.shape = shape;
  dl.strides = NULL;
  dl.byte_offset = 0;
  memset(&arg, 0, sizeof(arg));
  arg.type_index = kRFFIDLTensorPtr;
  arg.v.v_ptr = &dl;

  CHECK(call1("testing.tensor_strides", arg, &result) == 0);
  CHECK(result.type_index == kRFFIShape);
  cell = (RFFIShapeCell*)((char*)result.v.v_obj + sizeof(RFFIObject));
  CHECK(cell->size == 2 && cell->data[0] == 2 && cell->data[1] == 1);
  RFFIObjectDecRef(result.v.v_obj);

  CHECK(call1("testing.tensor_is_borrowed", arg, &result) == 0);
  CHECK(result.type_index == kRFFIBool && result.v.v_int64 == 1);

  /* The callee writes into the caller's memory. */
  data[4] = 7.0f;
  CHECK(call1("testing.tensor_zero_", arg, &result) == 0);
  CHECK(data[4] == 0.0f);

  /* A DLTensor* that breaks the rules is a TypeError naming the field. */
  dl.shape = NULL;
  CHECK(call1("testing.tensor_shape", arg, &result) == -1);
  expect_error("TypeError", "`shape` is NULL with ndim 2");
  /* testing.echo stores its argument, which a borrowed DLTensor* cannot be. */
  dl.shape = shape;
  CHECK(call1("testing.echo", arg, &result) == -1);
  expect_error("TypeError", "borrowed DLTensor*");
}

static void test_read_only(void) {
  Producer* p = make_producer();
  RFFIObjectHandle t = NULL;
  DLManagedTensorVersioned* out = NULL;
  DLManagedTensor* legacy = NULL;
  RFFIAny result;
  g_deleted = 0;
  p->managed.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
  CHECK(RFFITensorFromDLPackVersioned(&p->managed, 0, 0, &t) == 0);
  CHECK(call1("testing.tensor_zero_", object_arg(t), &result) == -1);
  expect_error("TypeError", "expected writable ffi.Tensor but got read-only ffi.Tensor");
  CHECK(p->data[1] == 1.0f);
  CHECK(RFFITensorToDLPack(t, &legacy) == -1 && legacy == NULL);
  expect_error("ValueError", "read-only");
  CHECK(RFFITensorToDLPackVersioned(t, &out) == 0);
  CHECK(out->flags == DLPACK_FLAG_BITMASK_READ_ONLY);
  out->deleter(out);
  CHECK(RFFIObjectDecRef(t) == 0);
  CHECK(g_deleted == 1);
}

/* Every refusal still runs the producer's deleter exactly once. */
static void test_bad_input(void) {
  Producer* p;
  RFFIObjectHandle t = NULL, f;
  DLManagedTensorVersioned* out = NULL;

  CHECK(RFFITensorFromDLPackVersioned(NULL, 0, 0, &t) == -1);
  expect_error("ValueError", "RFFITensorFromDLPackVersioned: `from` is NULL");

  g_deleted = 0;
  p = make_producer();
  CHECK(RFFITensorFromDLPackVersioned(&p->managed, 0, 0, NULL) == -1);
  expect_error("ValueError", "`out` is NULL");
  CHECK(g_deleted == 1);

  p = make_producer();
  CHECK(RFFITensorFromDLPackVersioned(&p->managed, -8, 0, &t) == -1);
  expect_error("ValueError", "`require_alignment` is negative (-8)");
  CHECK(g_deleted == 2);

  p = make_producer();
  p->managed.dl_tensor.ndim = -1;
  CHECK(RFFITensorFromDLPackVersioned(&p->managed, 0, 0, &t) == -1);
  expect_error("ValueError", "RFFITensorFromDLPackVersioned: `dl_tensor.ndim` is negative (-1)");
  CHECK(g_deleted == 3);

  p = make_producer();
  p->managed.version.major = 2;
  CHECK(RFFITensorFromDLPackVersioned(&p->managed, 0, 0, &t) == -1);
  expect_error("ValueError", "unsupported DLPack version 2.");
  CHECK(g_deleted == 4);

  p = make_producer();
  p->legacy.dl_tensor.data = NULL;
  CHECK(RFFITensorFromDLPack(&p->legacy, 0, 0, &t) == -1);
  expect_error("ValueError", "`dl_tensor.data` is NULL but the tensor has 6 elements");
  CHECK(g_deleted == 5);

  p = make_producer();
  p->managed.dl_tensor.dtype.lanes = 0;
  CHECK(RFFITensorFromDLPackVersioned(&p->managed, 0, 0, &t) == -1);
  expect_error("ValueError", "lanes is 0");
  CHECK(g_deleted == 6);

  p = make_producer();
  p->managed.dl_tensor.device.device_type = (DLDeviceType)99;
  CHECK(RFFITensorFromDLPackVersioned(&p->managed, 0, 0, &t) == -1);
  expect_error("ValueError", "unknown device type 99");
  CHECK(g_deleted == 7);

  /* Handles that are not tensors. */
  CHECK(RFFITensorGetDLTensorPtr(NULL) == NULL);
  expect_error("ValueError", "RFFITensorGetDLTensorPtr: `obj` is NULL");
  f = get_global("testing.echo");
  CHECK(RFFITensorGetDLTensorPtr(f) == NULL);
  expect_error("TypeError", "must be a tensor (ffi.Tensor) but is ffi.Function");
  CHECK(RFFITensorToDLPackVersioned(f, &out) == -1 && out == NULL);
  expect_error("TypeError", "RFFITensorToDLPackVersioned: `from` must be a tensor");
  CHECK(RFFIObjectDecRef(f) == 0);
}

static void test_alloc(void) {
  int64_t shape[2] = {4, 5};
  RFFIObjectHandle t = NULL;
  DLTensor* dl;
  DLTensor proto;
  CHECK(RFFITensorAlloc(shape, 2, float32(), device(kDLCPU, 0), &t) == 0);
  dl = RFFITensorGetDLTensorPtr(t);
  CHECK(dl->shape[1] == 5 && dl->strides[0] == 5 && dl->strides[1] == 1);
  CHECK(((uintptr_t)dl->data) % 64 == 0 && ((float*)dl->data)[19] == 0.0f);
  CHECK(RFFIObjectDecRef(t) == 0);

  /* Without an environment allocator only CPU tensors can be made. */
  CHECK(RFFITensorAlloc(shape, 2, float32(), device(kDLCUDA, 0), &t) == -1);
  expect_error("RuntimeError", "no allocator for cuda:0");
  CHECK(RFFITensorAlloc(shape, -1, float32(), device(kDLCPU, 0), &t) == -1);
  expect_error("ValueError", "`ndim` is negative (-1)");
  CHECK(RFFITensorAlloc(NULL, 2, float32(), device(kDLCPU, 0), &t) == -1);
  expect_error("ValueError", "RFFITensorAlloc: `shape` is NULL");
  CHECK(RFFITensorAlloc(shape, 2, float32(), device(77, 0), &t) == -1);
  expect_error("ValueError", "unknown device type 77");

  /* Like a prototype, as tvm-ffi's TVMFFIEnvTensorAlloc. */
  memset(&proto, 0, sizeof(proto));
  proto.device = device(kDLCPU, 0);
  proto.ndim = 2;
  proto.dtype = float32();
  proto.shape = shape;
  CHECK(RFFIEnvTensorAlloc(&proto, &t) == 0);
  CHECK(RFFITensorGetDLTensorPtr(t)->shape[0] == 4);
  CHECK(RFFIObjectDecRef(t) == 0);
  proto.shape = NULL;
  CHECK(RFFIEnvTensorAlloc(&proto, &t) == -1);
  expect_error("ValueError", "`prototype.shape` is NULL with ndim 2");
}

/* ---- An environment allocator, as a host framework installs one. ---- */

static int g_alloc_calls = 0;

static int host_alloc(DLTensor* prototype, DLManagedTensorVersioned** out, void* error_ctx,
                      RFFIDLPackSetError set_error) {
  Producer* p;
  ++g_alloc_calls;
  if (prototype->ndim != 2 || prototype->shape[0] * prototype->shape[1] > 6) {
    set_error(error_ctx, "MemoryError", "host_alloc: at most 6 elements");
    return -1;
  }
  p = make_producer();
  p->shape[0] = prototype->shape[0];
  p->shape[1] = prototype->shape[1];
  p->managed.dl_tensor.device = prototype->device;
  p->managed.dl_tensor.dtype = prototype->dtype;
  *out = &p->managed;
  return 0;
}

static void test_environment_allocator(void) {
  int64_t shape[2] = {3, 2};
  int64_t big[2] = {3, 3};
  RFFIObjectHandle t = NULL;
  RFFIDLPackManagedTensorAllocator prev = NULL;
  DLTensor* dl;
  g_deleted = 0;
  CHECK(RFFIEnvGetDLPackManagedTensorAllocator() == NULL);
  CHECK(RFFIEnvSetDLPackManagedTensorAllocator(host_alloc, 0, &prev) == 0);
  CHECK(prev == NULL && RFFIEnvGetDLPackManagedTensorAllocator() == host_alloc);

  /* Any device: the host's framework makes the memory. */
  CHECK(RFFITensorAlloc(shape, 2, float32(), device(kDLCUDA, 1), &t) == 0);
  CHECK(g_alloc_calls == 1);
  dl = RFFITensorGetDLTensorPtr(t);
  CHECK(dl->device.device_type == kDLCUDA && dl->device.device_id == 1);
  CHECK(dl->shape[0] == 3 && dl->strides[0] == 2);
  CHECK(RFFIObjectDecRef(t) == 0);
  CHECK(g_deleted == 1);

  /* Its errors come back with their kind. */
  CHECK(RFFITensorAlloc(big, 2, float32(), device(kDLCPU, 0), &t) == -1);
  expect_error("MemoryError", "host_alloc: at most 6 elements");

  CHECK(RFFIEnvSetDLPackManagedTensorAllocator(NULL, 0, &prev) == 0);
  CHECK(prev == host_alloc);
}

static void test_streams(void) {
  void* prev = (void*)1;
  int a, b;
  CHECK(RFFIEnvGetStream(kDLCUDA, 0) == NULL);
  CHECK(RFFIEnvSetStream(kDLCUDA, 0, &a, &prev) == 0 && prev == NULL);
  CHECK(RFFIEnvSetStream(kDLCUDA, 0, &b, &prev) == 0 && prev == &a);
  CHECK(RFFIEnvGetStream(kDLCUDA, 0) == &b);
  CHECK(RFFIEnvGetStream(kDLCUDA, 1) == NULL);
  CHECK(RFFIEnvSetStream(kDLCUDA, 0, NULL, NULL) == 0);
  CHECK(RFFIEnvGetStream(kDLCUDA, 0) == NULL);
  CHECK(RFFIEnvSetStream(kDLCUDA, -1, &a, NULL) == -1);
  expect_error("ValueError", "negative index -1");
  CHECK(RFFIEnvSetStream(1000, 0, &a, NULL) == -1);
  expect_error("ValueError", "unknown device type 1000");
  CHECK(RFFIEnvGetStream(1000, 0) == NULL);
}

int main(void) {
  test_import_echo_export();
  test_legacy_round_trip();
  test_dltensor_ptr_argument();
  test_read_only();
  test_bad_input();
  test_alloc();
  test_environment_allocator();
  test_streams();
  return finish("test_tensor");
}
