/* C-ABI benchmark: rffi (librffi.so) and tvm-ffi (libtvm_ffi.so) side by side in one process.
 * Both libraries are opened with dlopen and called through the same function-pointer types (the
 * two ABIs share every layout), so neither side gets a cheaper calling path. Prints a table of
 * ns per operation: the median and the best of REPEATS runs, and the median ratio rffi / tvm-ffi.
 *
 * usage: c_abi_bench <path/librffi.so> <path/libtvm_ffi.so> <path/libtvm_ffi_testing.so> */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "rffi/c_api.h"

#define REPEATS 9

typedef int32_t (*get_global_t)(const RFFIByteArray*, RFFIObjectHandle*);
typedef int32_t (*set_global_t)(const RFFIByteArray*, RFFIObjectHandle, int32_t);
typedef int32_t (*call_t)(RFFIObjectHandle, RFFIAny*, int32_t, RFFIAny*);
typedef int32_t (*decref_t)(RFFIObjectHandle);
typedef void (*move_raised_t)(RFFIObjectHandle*);
typedef void (*raise_cstr_t)(const char*, const char*);
typedef int32_t (*create_t)(void*, RFFISafeCallType, void (*)(void*), RFFIObjectHandle*);
typedef int32_t (*from_dlpack_t)(DLManagedTensorVersioned*, int32_t, int32_t, RFFIObjectHandle*);
typedef int32_t (*to_dlpack_t)(RFFIObjectHandle, DLManagedTensorVersioned**);

typedef struct {
  const char* name;
  get_global_t get_global;
  set_global_t set_global;
  call_t call;
  decref_t decref;
  move_raised_t move_raised;
  raise_cstr_t raise_cstr;
  create_t create;
  from_dlpack_t from_dlpack;
  to_dlpack_t to_dlpack;
  RFFIObjectHandle nop, add_one, raise, c_add3, tensor;
  const char* raise_name;
} Runtime;

static void* must_sym(void* lib, const char* prefix, const char* suffix) {
  char name[128];
  void* p;
  snprintf(name, sizeof(name), "%s%s", prefix, suffix);
  p = dlsym(lib, name);
  if (!p) {
    fprintf(stderr, "missing symbol %s\n", name);
    exit(2);
  }
  return p;
}

static RFFIByteArray ba(const char* s) {
  RFFIByteArray b;
  b.data = s;
  b.size = strlen(s);
  return b;
}

static RFFIObjectHandle global(Runtime* r, const char* name) {
  RFFIByteArray b = ba(name);
  RFFIObjectHandle h = NULL;
  if (r->get_global(&b, &h) != 0 || !h) {
    fprintf(stderr, "%s: missing global %s\n", r->name, name);
    exit(2);
  }
  return h;
}

/* The same C function registered in both runtimes: sums its int arguments. */
static int c_add3(void* self, const RFFIAny* args, int32_t n, RFFIAny* result) {
  int64_t s = 0;
  int32_t i;
  (void)self;
  for (i = 0; i < n; ++i) s += args[i].v.v_int64;
  result->type_index = kRFFIInt;
  result->v.v_int64 = s;
  return 0;
}

/* A producer's DLPack tensor (1024 float32 on the CPU) whose deleter does nothing, so the same
 * struct can be handed over again after each release. */
static float g_data[1024];
static int64_t g_shape[1] = {1024};
static int64_t g_strides[1] = {1};
static void producer_deleter(DLManagedTensorVersioned* self) { (void)self; }

static DLManagedTensorVersioned* producer_tensor(void) {
  static DLManagedTensorVersioned t;
  t.version.major = 1;
  t.version.minor = 1;
  t.manager_ctx = NULL;
  t.deleter = producer_deleter;
  t.flags = 0;
  t.dl_tensor.data = g_data;
  t.dl_tensor.device.device_type = kDLCPU;
  t.dl_tensor.device.device_id = 0;
  t.dl_tensor.ndim = 1;
  t.dl_tensor.dtype.code = kDLFloat;
  t.dl_tensor.dtype.bits = 32;
  t.dl_tensor.dtype.lanes = 1;
  t.dl_tensor.shape = g_shape;
  t.dl_tensor.strides = g_strides;
  t.dl_tensor.byte_offset = 0;
  return &t;
}

static void load(Runtime* r, const char* name, void* lib, const char* prefix, const char* raise_name) {
  RFFIObjectHandle f = NULL;
  RFFIByteArray b = ba("bench.c_add3");
  r->name = name;
  r->get_global = (get_global_t)must_sym(lib, prefix, "FunctionGetGlobal");
  r->set_global = (set_global_t)must_sym(lib, prefix, "FunctionSetGlobal");
  r->call = (call_t)must_sym(lib, prefix, "FunctionCall");
  r->decref = (decref_t)must_sym(lib, prefix, "ObjectDecRef");
  r->move_raised = (move_raised_t)must_sym(lib, prefix, "ErrorMoveFromRaised");
  r->raise_cstr = (raise_cstr_t)must_sym(lib, prefix, "ErrorSetRaisedFromCStr");
  r->create = (create_t)must_sym(lib, prefix, "FunctionCreate");
  r->from_dlpack = (from_dlpack_t)must_sym(lib, prefix, "TensorFromDLPackVersioned");
  r->to_dlpack = (to_dlpack_t)must_sym(lib, prefix, "TensorToDLPackVersioned");
  r->nop = global(r, "testing.nop");
  r->add_one = global(r, "testing.add_one");
  r->raise_name = raise_name;
  r->raise = global(r, raise_name);
  if (r->create(NULL, c_add3, NULL, &f) != 0 || r->set_global(&b, f, 1) != 0) exit(2);
  r->c_add3 = f;
  if (r->from_dlpack(producer_tensor(), 0, 0, &r->tensor) != 0) exit(2);
}

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static RFFIAny int_any(int64_t x) {
  RFFIAny a;
  memset(&a, 0, sizeof(a));
  a.type_index = kRFFIInt;
  a.v.v_int64 = x;
  return a;
}

static RFFIAny raw_str(const char* s) {
  RFFIAny a;
  memset(&a, 0, sizeof(a));
  a.type_index = kRFFIRawStr;
  a.v.v_c_str = s;
  return a;
}

enum { CALL0, CALL3, CALL_C3, ADD_ONE, LOOKUP, RAISE_C, RAISE_FN, FROM_DLPACK, TO_DLPACK, NCASES };
static const char* CASE_NAMES[NCASES] = {
    "call testing.nop() (0 args)",
    "call testing.nop(1, 2, 3) (3 int args)",
    "call C function add3(1, 2, 3) registered via FunctionCreate",
    "call testing.add_one(1) (typed native function)",
    "FunctionGetGlobal(\"testing.add_one\") + DecRef",
    "ErrorSetRaisedFromCStr + ErrorMoveFromRaised + DecRef",
    "call a function that raises ValueError + move out + DecRef",
    "TensorFromDLPackVersioned (1-D float32) + release (DecRef)",
    "TensorToDLPackVersioned + release (the export's deleter)",
};
static const long ITERS[NCASES] = {2000000, 2000000, 2000000, 2000000, 1000000, 20000, 20000,
                                   1000000, 1000000};

/* Runs one case for `iters` iterations; returns ns per operation. */
static double run_case(Runtime* r, int c, long iters) {
  RFFIAny args[3], result;
  RFFIObjectHandle h = NULL;
  RFFIByteArray name = ba("testing.add_one");
  long i;
  double t0;
  args[0] = int_any(1);
  args[1] = int_any(2);
  args[2] = int_any(3);
  memset(&result, 0, sizeof(result));
  t0 = now_ns();
  switch (c) {
    case CALL0:
      for (i = 0; i < iters; ++i) r->call(r->nop, args, 0, &result);
      break;
    case CALL3:
      for (i = 0; i < iters; ++i) r->call(r->nop, args, 3, &result);
      break;
    case CALL_C3:
      for (i = 0; i < iters; ++i) r->call(r->c_add3, args, 3, &result);
      break;
    case ADD_ONE:
      for (i = 0; i < iters; ++i) r->call(r->add_one, args, 1, &result);
      break;
    case LOOKUP:
      for (i = 0; i < iters; ++i) {
        r->get_global(&name, &h);
        r->decref(h);
      }
      break;
    case RAISE_C:
      for (i = 0; i < iters; ++i) {
        r->raise_cstr("ValueError", "benchmark error");
        r->move_raised(&h);
        r->decref(h);
      }
      break;
    case RAISE_FN:
      args[0] = raw_str("ValueError");
      args[1] = raw_str("benchmark error");
      for (i = 0; i < iters; ++i) {
        if (r->call(r->raise, args, 2, &result) != -1) exit(3);
        r->move_raised(&h);
        r->decref(h);
      }
      break;
    case FROM_DLPACK:
      for (i = 0; i < iters; ++i) {
        if (r->from_dlpack(producer_tensor(), 0, 0, &h) != 0) exit(3);
        r->decref(h);
      }
      break;
    case TO_DLPACK:
      for (i = 0; i < iters; ++i) {
        DLManagedTensorVersioned* out = NULL;
        if (r->to_dlpack(r->tensor, &out) != 0) exit(3);
        out->deleter(out);
      }
      break;
  }
  return (now_ns() - t0) / (double)iters;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  void *rffi, *tvm, *tvm_testing;
  Runtime rt[2];
  double samples[2][NCASES][REPEATS];
  int c, k, rep;
  if (argc != 4) {
    fprintf(stderr, "usage: %s librffi.so libtvm_ffi.so libtvm_ffi_testing.so\n", argv[0]);
    return 2;
  }
  rffi = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  tvm = dlopen(argv[2], RTLD_NOW | RTLD_GLOBAL);
  tvm_testing = tvm ? dlopen(argv[3], RTLD_NOW | RTLD_GLOBAL) : NULL;
  if (!rffi || !tvm || !tvm_testing) {
    fprintf(stderr, "dlopen failed: %s\n", dlerror());
    return 2;
  }
  load(&rt[0], "rffi", rffi, "RFFI", "testing.raise_error");
  load(&rt[1], "tvm-ffi", tvm, "TVMFFI", "testing.test_raise_error");

  /* Warm up (first errors symbolize or allocate once), then interleave the runtimes. */
  for (k = 0; k < 2; ++k)
    for (c = 0; c < NCASES; ++c) run_case(&rt[k], c, ITERS[c] / 20 + 1);
  for (rep = 0; rep < REPEATS; ++rep)
    for (c = 0; c < NCASES; ++c)
      for (k = 0; k < 2; ++k) samples[k][c][rep] = run_case(&rt[(k + rep) % 2], c, ITERS[c]);

  printf("| operation | rffi median ns | rffi best ns | tvm-ffi median ns | tvm-ffi best ns | "
         "rffi / tvm-ffi (median) |\n|---|---|---|---|---|---|\n");
  for (c = 0; c < NCASES; ++c) {
    double med[2], best[2];
    for (k = 0; k < 2; ++k) {
      /* samples[k] holds runtime (k + rep) % 2 at repeat rep: regroup by runtime. */
      double by_rt[REPEATS];
      int n = 0;
      for (rep = 0; rep < REPEATS; ++rep) {
        int which;
        for (which = 0; which < 2; ++which)
          if ((which + rep) % 2 == k) by_rt[n++] = samples[which][c][rep];
      }
      qsort(by_rt, REPEATS, sizeof(double), cmp_double);
      med[k] = by_rt[REPEATS / 2];
      best[k] = by_rt[0];
    }
    printf("| %s | %.1f | %.1f | %.1f | %.1f | %.2fx |\n", CASE_NAMES[c], med[0], best[0], med[1],
           best[1], med[0] / med[1]);
  }
  return 0;
}
