// The generated header compiles as C++11 and its functions have C linkage.
#include "rffi/c_api.h"

static_assert(sizeof(RFFIAny) == 16, "RFFIAny");

int main() {
  RFFIVersion v;
  RFFIGetVersion(&v);
  int (*call)(RFFIObjectHandle, RFFIAny*, int32_t, RFFIAny*) = &RFFIFunctionCall;
  (void)call;
  return v.major == RFFI_VERSION_MAJOR ? 0 : 1;
}
