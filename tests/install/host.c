/* A C host built against an installed rffi through pkg-config (or `python -m rffi --cflags`). */
#include <stdio.h>
#include <string.h>
#include "rffi/c_api.h"

int main(void) {
  RFFIByteArray name = {"testing.add_one", 15};
  RFFIObjectHandle f = NULL;
  RFFIAny arg, result;
  RFFIVersion v;
  RFFIGetVersion(&v);
  if (RFFIFunctionGetGlobal(&name, &f) != 0 || f == NULL) return 1;
  memset(&arg, 0, sizeof(arg));
  memset(&result, 0, sizeof(result));
  arg.type_index = kRFFIInt;
  arg.v.v_int64 = 41;
  if (RFFIFunctionCall(f, &arg, 1, &result) != 0 || result.v.v_int64 != 42) return 1;
  RFFIObjectDecRef(f);
  printf("c host: rffi ABI %u.%u.%u, testing.add_one(41) = 42\n", v.major, v.minor, v.patch);
  return 0;
}
