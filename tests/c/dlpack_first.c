/* The official <dlpack/dlpack.h> included before rffi/c_api.h: the header must skip its own
 * DLPack block and work with the official definitions (there DLManagedTensorVersioned is a bare
 * struct tag). Built as C11 and as C++11 with tests/c/dlpack_official on the include path. */
#include <dlpack/dlpack.h>
#include <stdio.h>
#include <stdlib.h>
#include "rffi/c_api.h"

static int g_deleted = 0;

static void deleter(struct DLManagedTensorVersioned* self) {
  ++g_deleted;
  free(self->dl_tensor.data);
}

int main(void) {
  static int64_t shape[2] = {2, 3};
  struct DLManagedTensorVersioned m;
  RFFIObjectHandle t = NULL;
  DLTensor* dl;
  DLDevice cpu;
  DLDataType f32;
  int ok = 1;

  cpu.device_type = kDLCPU;
  cpu.device_id = 0;
  f32.code = kDLFloat;
  f32.bits = 32;
  f32.lanes = 1;
  m.version.major = DLPACK_MAJOR_VERSION;
  m.version.minor = DLPACK_MINOR_VERSION;
  m.manager_ctx = NULL;
  m.deleter = deleter;
  m.flags = 0;
  m.dl_tensor.data = malloc(6 * sizeof(float));
  m.dl_tensor.device = cpu;
  m.dl_tensor.ndim = 2;
  m.dl_tensor.dtype = f32;
  m.dl_tensor.shape = shape;
  m.dl_tensor.strides = NULL;
  m.dl_tensor.byte_offset = 0;

  ok &= RFFITensorFromDLPackVersioned(&m, 0, 0, &t) == 0;
  dl = RFFITensorGetDLTensorPtr(t);
  ok &= dl != NULL && dl->ndim == 2 && dl->strides != NULL && dl->strides[0] == 3;
  ok &= dl != NULL && dl->dtype.code == kDLFloat && dl->device.device_type == kDLCPU;
  ok &= (void*)dl == (void*)&((RFFITensorObject*)t)->dl_tensor;
  ok &= RFFIObjectDecRef(t) == 0;
  ok &= g_deleted == 1;
  printf("dlpack_first: %s\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
