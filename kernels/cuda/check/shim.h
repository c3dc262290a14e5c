// What NVRTC declares by itself and the kernels use, for clang's CUDA device compilation without
// a CUDA toolkit (-nocudainc -nocudalib): the CUDA keywords, the builtin index variables, and the
// intrinsics, mapped to clang's NVVM builtins. The PTX from this is for checking the sources
// (syntax, types, every template instance, per architecture), not for running: the libm
// functions without an NVVM builtin are declared only, so the PTX calls them unresolved.
#pragma once

#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __shared__ __attribute__((shared))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#define __align__(n) __attribute__((aligned(n)))
// Thread block clusters (sm_90): clang has no such attribute; the launch shape is not checked.
#define __cluster_dims__(...)

#include <__clang_cuda_builtin_vars.h>

// Bit casts.
__device__ __forceinline__ unsigned int __float_as_uint(float x) { return __builtin_bit_cast(unsigned int, x); }
__device__ __forceinline__ int __float_as_int(float x) { return __builtin_bit_cast(int, x); }
__device__ __forceinline__ float __uint_as_float(unsigned int x) { return __builtin_bit_cast(float, x); }
__device__ __forceinline__ float __int_as_float(int x) { return __builtin_bit_cast(float, x); }
__device__ __forceinline__ long long __double_as_longlong(double x) { return __builtin_bit_cast(long long, x); }
__device__ __forceinline__ double __longlong_as_double(long long x) { return __builtin_bit_cast(double, x); }

// Integer intrinsics.
__device__ __forceinline__ unsigned int __umulhi(unsigned int a, unsigned int b) { return __nvvm_mulhi_ui(a, b); }
__device__ __forceinline__ unsigned long long __umul64hi(unsigned long long a, unsigned long long b) { return __nvvm_mulhi_ull(a, b); }

// Warp shuffles (butterfly), every type CUDA overloads; 64-bit values as two 32-bit halves.
#define RFFI_SHFL_C(width) (((32 - (width)) << 8) | 0x1f)
__device__ __forceinline__ int __shfl_xor_sync(unsigned mask, int v, int lane, int width = 32) {
  return __nvvm_shfl_sync_bfly_i32(mask, v, lane, RFFI_SHFL_C(width));
}
__device__ __forceinline__ unsigned int __shfl_xor_sync(unsigned mask, unsigned int v, int lane, int width = 32) {
  return (unsigned int)__nvvm_shfl_sync_bfly_i32(mask, (int)v, lane, RFFI_SHFL_C(width));
}
__device__ __forceinline__ float __shfl_xor_sync(unsigned mask, float v, int lane, int width = 32) {
  return __nvvm_shfl_sync_bfly_f32(mask, v, lane, RFFI_SHFL_C(width));
}
__device__ __forceinline__ long long __shfl_xor_sync(unsigned mask, long long v, int lane, int width = 32) {
  int lo = __nvvm_shfl_sync_bfly_i32(mask, (int)v, lane, RFFI_SHFL_C(width));
  int hi = __nvvm_shfl_sync_bfly_i32(mask, (int)(v >> 32), lane, RFFI_SHFL_C(width));
  return (long long)(((unsigned long long)(unsigned int)hi << 32) | (unsigned int)lo);
}
__device__ __forceinline__ unsigned long long __shfl_xor_sync(unsigned mask, unsigned long long v, int lane, int width = 32) {
  return (unsigned long long)__shfl_xor_sync(mask, (long long)v, lane, width);
}
__device__ __forceinline__ long __shfl_xor_sync(unsigned mask, long v, int lane, int width = 32) {
  return (long)__shfl_xor_sync(mask, (long long)v, lane, width);
}
__device__ __forceinline__ unsigned long __shfl_xor_sync(unsigned mask, unsigned long v, int lane, int width = 32) {
  return (unsigned long)__shfl_xor_sync(mask, (long long)v, lane, width);
}
__device__ __forceinline__ double __shfl_xor_sync(unsigned mask, double v, int lane, int width = 32) {
  return __longlong_as_double(__shfl_xor_sync(mask, __double_as_longlong(v), lane, width));
}
#undef RFFI_SHFL_C
#if __CUDA_ARCH__ >= 800
__device__ __forceinline__ unsigned int __reduce_max_sync(unsigned mask, unsigned int v) { return __nvvm_redux_sync_umax(v, mask); }
#endif


// Fast float math (what CUDA's intrinsics compile to).
__device__ __forceinline__ float __expf(float x) { return __nvvm_ex2_approx_f(x * 1.4426950408889634f); }
__device__ __forceinline__ float __fdividef(float x, float y) { return __nvvm_div_approx_f(x, y); }
__device__ __forceinline__ float rsqrtf(float x) { return __nvvm_rsqrt_approx_f(x); }
__device__ __forceinline__ float fabsf(float x) { return __nvvm_fabs_f(x); }
__device__ __forceinline__ double fabs(double x) { return __nvvm_fabs_d(x); }
__device__ __forceinline__ float sqrtf(float x) { return __nvvm_sqrt_rn_f(x); }
__device__ __forceinline__ double sqrt(double x) { return __nvvm_sqrt_rn_d(x); }
__device__ __forceinline__ float fminf(float x, float y) { return __nvvm_fmin_f(x, y); }
__device__ __forceinline__ float fmaxf(float x, float y) { return __nvvm_fmax_f(x, y); }

// libm functions without an NVVM builtin: declared (the PTX calls them), with the float
// overloads of C++'s <cmath> that NVRTC provides.
extern "C" __device__ float expf(float);
extern "C" __device__ double exp(double);
extern "C" __device__ float erff(float);
extern "C" __device__ double erf(double);
extern "C" __device__ float erfcf(float);
extern "C" __device__ double erfc(double);
extern "C" __device__ float tanhf(float);
extern "C" __device__ double tanh(double);
extern "C" __device__ float logf(float);
extern "C" __device__ double log(double);
__device__ __forceinline__ float exp(float x) { return expf(x); }
__device__ __forceinline__ float erf(float x) { return erff(x); }
__device__ __forceinline__ float erfc(float x) { return erfcf(x); }
__device__ __forceinline__ float tanh(float x) { return tanhf(x); }
__device__ __forceinline__ float log(float x) { return logf(x); }
__device__ __forceinline__ float sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ float fabs(float x) { return fabsf(x); }
