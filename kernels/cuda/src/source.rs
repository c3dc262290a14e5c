//! The CUDA C++ source of the kernels, one module per dtype, compiled with NVRTC at first use.
//!
//! Self-contained: float16 and bfloat16 are stored as 16-bit integers and converted with PTX
//! `cvt` (float16; bfloat16 from sm_80) or bit arithmetic (bfloat16 before sm_80), so NVRTC
//! needs no CUDA headers. Every entry point takes raw device pointers (data + byte offset, as
//! u64 from the host) and element strides, so tensors from any framework work in place.

use rffi_core::DataType;

/// Most dims a strided launch takes after collapsing (`Lay` in the source).
pub const MAX_DIMS: usize = 8;

/// The packs-per-thread variants of the one-read softmax (`softmax_rows_reg<PK>` in the source).
pub const SOFTMAX_PACKS: [(i64, &str); 4] = [(1, "1"), (2, "2"), (4, "4"), (8, "8")];

/// What the host needs to know about a dtype's module.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Dt {
    /// Suffix of the module name.
    pub name: &'static str,
    /// Storage bytes.
    pub size: usize,
    /// Elements per 16-byte vector load.
    pub vec: usize,
    pub is_float: bool,
    /// The compute type's C name (what a scalar operand is passed as).
    pub compute: Compute,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Compute {
    F32,
    F64,
    I32,
    I64,
}

pub fn dt_of(d: DataType) -> Option<Dt> {
    let (name, size, is_float, compute) = if d == DataType::float(32) {
        ("f32", 4, true, Compute::F32)
    } else if d == DataType::float(64) {
        ("f64", 8, true, Compute::F64)
    } else if d == DataType::float(16) {
        ("f16", 2, true, Compute::F32)
    } else if d == DataType::bfloat16() {
        ("bf16", 2, true, Compute::F32)
    } else if d == DataType::int(32) {
        ("i32", 4, false, Compute::I32)
    } else if d == DataType::int(64) {
        ("i64", 8, false, Compute::I64)
    } else {
        return None;
    };
    Some(Dt {
        name,
        size,
        vec: 16 / size,
        is_float,
        compute,
    })
}

const COMMON: &str = r#"
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef long long i64;
#define MAXD 8
// Element strides of up to three operands over one collapsed shape.
struct Lay { int nd; int pad; i64 shape[MAXD]; i64 s0[MAXD]; i64 s1[MAXD]; i64 s2[MAXD]; };

__device__ __forceinline__ float h2f(u16 h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
__device__ __forceinline__ u16 f2h(float f) { u16 h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
__device__ __forceinline__ float b2f(u16 b) { return __uint_as_float(((u32)b) << 16); }
__device__ __forceinline__ u16 f2b(float f) {
#if __CUDA_ARCH__ >= 800
  u16 h; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h;  // one instruction
#else
  u32 u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (u16)((u >> 16) | 0x40u);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
  return (u16)(u >> 16);
#endif
}
"#;

const BODY: &str = r#"
struct __align__(16) Pack { T v[VEC]; };

__device__ __forceinline__ void offsets(const Lay& L, i64 i, i64& o0, i64& o1, i64& o2) {
  o0 = 0; o1 = 0; o2 = 0;
  for (int d = L.nd - 1; d >= 0; --d) {
    i64 c = i % L.shape[d];
    i = i / L.shape[d];
    o0 += c * L.s0[d]; o1 += c * L.s1[d]; o2 += c * L.s2[d];
  }
}

#define GRID_LOOP(i, n) for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (u64)gridDim.x * blockDim.x)

#define BINARY(NAME, OP) \
extern "C" __global__ void NAME##_vec(u64 pa, u64 pb, u64 po, u64 n) { \
  const Pack* a = (const Pack*)pa; const Pack* b = (const Pack*)pb; Pack* o = (Pack*)po; \
  u64 nv = n / VEC; \
  GRID_LOOP(k, nv) { Pack x = a[k], y = b[k], z; \
    _Pragma("unroll") for (int j = 0; j < VEC; ++j) z.v[j] = st(OP(ld(x.v[j]), ld(y.v[j]))); o[k] = z; } \
  const T* as = (const T*)pa; const T* bs = (const T*)pb; T* os = (T*)po; \
  GRID_LOOP(k, n - nv * VEC) { u64 i = nv * VEC + k; os[i] = st(OP(ld(as[i]), ld(bs[i]))); } \
} \
extern "C" __global__ void NAME##_strided(u64 pa, u64 pb, u64 po, u64 n, Lay L) { \
  const T* a = (const T*)pa; const T* b = (const T*)pb; T* o = (T*)po; \
  GRID_LOOP(i, n) { i64 x, y, z; offsets(L, (i64)i, x, y, z); o[z] = st(OP(ld(a[x]), ld(b[y]))); } \
} \
extern "C" __global__ void NAME##_scalar_vec(u64 pa, C s, u64 po, u64 n) { \
  const Pack* a = (const Pack*)pa; Pack* o = (Pack*)po; \
  u64 nv = n / VEC; \
  GRID_LOOP(k, nv) { Pack x = a[k], z; \
    _Pragma("unroll") for (int j = 0; j < VEC; ++j) z.v[j] = st(OP(ld(x.v[j]), s)); o[k] = z; } \
  const T* as = (const T*)pa; T* os = (T*)po; \
  GRID_LOOP(k, n - nv * VEC) { u64 i = nv * VEC + k; os[i] = st(OP(ld(as[i]), s)); } \
} \
extern "C" __global__ void NAME##_scalar_strided(u64 pa, C s, u64 po, u64 n, Lay L) { \
  const T* a = (const T*)pa; T* o = (T*)po; \
  GRID_LOOP(i, n) { i64 x, y, z; offsets(L, (i64)i, x, y, z); o[y] = st(OP(ld(a[x]), s)); } \
}

#define UNARY(NAME, OP) \
extern "C" __global__ void NAME##_vec(u64 pa, u64 po, u64 n) { \
  const Pack* a = (const Pack*)pa; Pack* o = (Pack*)po; \
  u64 nv = n / VEC; \
  GRID_LOOP(k, nv) { Pack x = a[k], z; \
    _Pragma("unroll") for (int j = 0; j < VEC; ++j) z.v[j] = st(OP(ld(x.v[j]))); o[k] = z; } \
  const T* as = (const T*)pa; T* os = (T*)po; \
  GRID_LOOP(k, n - nv * VEC) { u64 i = nv * VEC + k; os[i] = st(OP(ld(as[i]))); } \
} \
extern "C" __global__ void NAME##_strided(u64 pa, u64 po, u64 n, Lay L) { \
  const T* a = (const T*)pa; T* o = (T*)po; \
  GRID_LOOP(i, n) { i64 x, y, z; offsets(L, (i64)i, x, y, z); o[y] = st(OP(ld(a[x]))); } \
}

#define OP_ADD(x, y) ADD(x, y)
#define OP_SUB(x, y) SUB(x, y)
#define OP_MUL(x, y) MUL(x, y)
#define OP_COPY(x) (x)
BINARY(add, OP_ADD)
BINARY(sub, OP_SUB)
BINARY(mul, OP_MUL)
UNARY(copy, OP_COPY)

#if IS_FLOAT
#define OP_DIV(x, y) ((x) / (y))
// NaN stays NaN (x < 0 is false for NaN), as in PyTorch.
#define OP_RELU(x) ((x) < (C)0 ? (C)0 : (x))
#define OP_EXP(x) EXP(x)
// The exact (erf) GELU, PyTorch's default; erfc avoids the cancellation of 1 + erf(x) for x < 0.
#define OP_GELU(x) ((C)0.5 * (x) * ERFC(-(x) * (C)0.70710678118654752440))
BINARY(div, OP_DIV)
UNARY(relu, OP_RELU)
UNARY(exp, OP_EXP)
UNARY(gelu, OP_GELU)

template <typename A> __device__ __forceinline__ A warp_sum(A v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// A block-wide sum; every thread gets the result. `sh` holds 32 values.
template <typename A> __device__ __forceinline__ A block_sum(A v, A* sh) {
  int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  v = warp_sum(v);
  __syncthreads();
  if (lane == 0) sh[w] = v;
  __syncthreads();
  v = lane < nw ? sh[lane] : (A)0;
  return warp_sum(v);
}

// (max, sum of exp(x - max)) pairs, merged.
__device__ __forceinline__ void ms_merge(C& m, C& s, C m2, C s2) {
  C mm = m > m2 ? m : m2;
  if (mm == NEG_INF) { m = mm; s = 0; return; }
  s = s * EXP(m - mm) + s2 * EXP(m2 - mm);
  m = mm;
}

__device__ __forceinline__ void ms_add(C& m, C& s, C v) {
  if (v > m) { s = (m == NEG_INF ? (C)0 : s * EXP(m - v)) + (C)1; m = v; }
  else if (v == NEG_INF) { }
  else { s += EXP(v - m); }
}

__device__ __forceinline__ void block_ms(C& m, C& s, C* shm, C* shs) {
  int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  for (int o = 16; o > 0; o >>= 1) {
    C m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
    ms_merge(m, s, m2, s2);
  }
  __syncthreads();
  if (lane == 0) { shm[w] = m; shs[w] = s; }
  __syncthreads();
  m = lane < nw ? shm[lane] : NEG_INF;
  s = lane < nw ? shs[lane] : (C)0;
  for (int o = 16; o > 0; o >>= 1) {
    C m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
    ms_merge(m, s, m2, s2);
  }
}

// The start of row `r` of x (s0) and out (s1) over the leading dims.
__device__ __forceinline__ void row_start(const Lay& L, i64 r, i64& ox, i64& oo) {
  i64 z; offsets(L, r, ox, oo, z);
}

// Softmax over rows of `len` elements: one block per row. Pass 1 keeps a running (max, sum),
// pass 2 rereads the row (from L2 for rows of a few KB) and writes exp(x - max) / sum.
extern "C" __global__ void softmax_rows(u64 px, u64 po, i64 rows, i64 len, i64 sx, i64 so, Lay L, int vec) {
  __shared__ C shm[32], shs[32];
  for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
    i64 ox, oo; row_start(L, r, ox, oo);
    const T* x = (const T*)px + ox; T* o = (T*)po + oo;
    C m = NEG_INF, s = 0;
    i64 nv = vec ? len / VEC : 0;
    for (i64 k = threadIdx.x; k < nv; k += blockDim.x) {
      Pack p = ((const Pack*)x)[k];
      _Pragma("unroll") for (int j = 0; j < VEC; ++j) ms_add(m, s, ld(p.v[j]));
    }
    for (i64 k = nv * VEC + threadIdx.x; k < len; k += blockDim.x) ms_add(m, s, ld(x[k * sx]));
    block_ms(m, s, shm, shs);
    C inv = (C)1 / s;
    for (i64 k = threadIdx.x; k < nv; k += blockDim.x) {
      Pack p = ((const Pack*)x)[k], q;
      _Pragma("unroll") for (int j = 0; j < VEC; ++j) q.v[j] = st(EXP(ld(p.v[j]) - m) * inv);
      ((Pack*)o)[k] = q;
    }
    for (i64 k = nv * VEC + threadIdx.x; k < len; k += blockDim.x) o[k * so] = st(EXP(ld(x[k * sx]) - m) * inv);
  }
}

// A block-wide maximum; every thread gets the result. `sh` holds 32 values.
template <typename A> __device__ __forceinline__ A block_max(A v, A* sh) {
  int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  for (int o = 16; o > 0; o >>= 1) { A u = __shfl_xor_sync(0xffffffffu, v, o); v = u > v ? u : v; }
  __syncthreads();
  if (lane == 0) sh[w] = v;
  __syncthreads();
  v = lane < nw ? sh[lane] : (A)NEG_INF;
  for (int o = 16; o > 0; o >>= 1) { A u = __shfl_xor_sync(0xffffffffu, v, o); v = u > v ? u : v; }
  return v;
}

// Softmax of contiguous, 16-byte aligned rows of whole packs that fit in registers (at most PK
// packs per thread): one block per row; every element is read once, exponentiated once and
// written once. A NaN anywhere makes the row NaN (through the sum), as in PyTorch. Instantiated
// for PK = 1, 2, 4, 8 (`softmax_rows_reg<PK>`); the host picks PK from the row length and tuning.
template <int PK> __device__ __forceinline__ void softmax_reg(u64 px, u64 po, i64 rows, i64 len, const Lay& L) {
  __shared__ C sh[32];
  const i64 nv = len / VEC;
  for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
    i64 ox, oo; row_start(L, r, ox, oo);
    const Pack* x = (const Pack*)((const T*)px + ox);
    Pack* o = (Pack*)((T*)po + oo);
    C v[PK][VEC];
    C m = NEG_INF;
    _Pragma("unroll") for (int p = 0; p < PK; ++p) {
      i64 k = threadIdx.x + (i64)p * blockDim.x;
      if (k < nv) {
        Pack q = x[k];
        _Pragma("unroll") for (int j = 0; j < VEC; ++j) { v[p][j] = ld(q.v[j]); m = v[p][j] > m ? v[p][j] : m; }
      } else {
        _Pragma("unroll") for (int j = 0; j < VEC; ++j) v[p][j] = NEG_INF;
      }
    }
    m = block_max(m, sh);
    C s = 0;
    _Pragma("unroll") for (int p = 0; p < PK; ++p)
      _Pragma("unroll") for (int j = 0; j < VEC; ++j) { v[p][j] = FEXP(v[p][j] - m); s += v[p][j]; }
    s = block_sum(s, sh);
    C inv = (C)1 / s;
    _Pragma("unroll") for (int p = 0; p < PK; ++p) {
      i64 k = threadIdx.x + (i64)p * blockDim.x;
      if (k < nv) {
        Pack q;
        _Pragma("unroll") for (int j = 0; j < VEC; ++j) q.v[j] = st(v[p][j] * inv);
        o[k] = q;
      }
    }
  }
}
// The bound keeps every variant launchable at 1024 threads (at most 64 registers a thread).
#define SOFTMAX_REG(PK) \
extern "C" __global__ void __launch_bounds__(1024) softmax_rows_reg##PK(u64 px, u64 po, i64 rows, i64 len, Lay L) { softmax_reg<PK>(px, po, rows, len, L); }
SOFTMAX_REG(1)
SOFTMAX_REG(2)
SOFTMAX_REG(4)
SOFTMAX_REG(8)

// Sums of rows (the last axis): one block per row, accumulated in ACC.
extern "C" __global__ void sum_rows(u64 px, u64 po, i64 rows, i64 len, i64 sx, Lay L) {
  __shared__ ACC sh[32];
  for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
    i64 ox, oo; row_start(L, r, ox, oo);
    const T* x = (const T*)px + ox;
    ACC a = 0;
    for (i64 k = threadIdx.x; k < len; k += blockDim.x) a += (ACC)ld(x[k * sx]);
    a = block_sum(a, sh);
    if (threadIdx.x == 0) ((T*)po)[oo] = st((C)a);
  }
}

// Every element into one float64 accumulator (zeroed by the host): a block sum each, then one
// atomic add per block.
extern "C" __global__ void sum_all(u64 px, u64 n, Lay L, int contiguous, u64 pacc) {
  __shared__ ACC sh[32];
  const T* x = (const T*)px;
  ACC a = 0;
  GRID_LOOP(i, n) {
    i64 o0 = (i64)i, o1, o2;
    if (!contiguous) offsets(L, (i64)i, o0, o1, o2);
    a += (ACC)ld(x[o0]);
  }
  a = block_sum(a, sh);
  if (threadIdx.x == 0) atomicAdd((double*)pacc, (double)a);
}

extern "C" __global__ void store_acc(u64 pacc, u64 po) { *(T*)po = st((C)*(const double*)pacc); }
#endif
"#;

/// The source of the module for `dt`.
pub fn module_source(dt: &Dt) -> String {
    let defs = match dt.name {
        "f32" => {
            "typedef float T; typedef float C; typedef float ACC;\n#define IS_FLOAT 1\n\
                  __device__ __forceinline__ C ld(T v) { return v; }\n\
                  __device__ __forceinline__ T st(C v) { return v; }\n\
                  #define EXP(x) expf(x)\n#define FEXP(x) expf(x)\n#define ERFC(x) erfcf(x)\n\
                  #define NEG_INF (-__int_as_float(0x7f800000))\n"
        }
        "f64" => {
            "typedef double T; typedef double C; typedef double ACC;\n#define IS_FLOAT 1\n\
                  __device__ __forceinline__ C ld(T v) { return v; }\n\
                  __device__ __forceinline__ T st(C v) { return v; }\n\
                  #define EXP(x) exp(x)\n#define FEXP(x) exp(x)\n#define ERFC(x) erfc(x)\n\
                  #define NEG_INF (-__longlong_as_double(0x7ff0000000000000LL))\n"
        }
        "f16" => {
            "typedef u16 T; typedef float C; typedef float ACC;\n#define IS_FLOAT 1\n\
                  __device__ __forceinline__ C ld(T v) { return h2f(v); }\n\
                  __device__ __forceinline__ T st(C v) { return f2h(v); }\n\
                  #define EXP(x) expf(x)\n#define FEXP(x) __expf(x)\n#define ERFC(x) erfcf(x)\n\
                  #define NEG_INF (-__int_as_float(0x7f800000))\n"
        }
        "bf16" => {
            "typedef u16 T; typedef float C; typedef float ACC;\n#define IS_FLOAT 1\n\
                  __device__ __forceinline__ C ld(T v) { return b2f(v); }\n\
                  __device__ __forceinline__ T st(C v) { return f2b(v); }\n\
                  #define EXP(x) expf(x)\n#define FEXP(x) __expf(x)\n#define ERFC(x) erfcf(x)\n\
                  #define NEG_INF (-__int_as_float(0x7f800000))\n"
        }
        "i32" => {
            "typedef int T; typedef int C; typedef unsigned int U;\n#define IS_FLOAT 0\n\
                  __device__ __forceinline__ C ld(T v) { return v; }\n\
                  __device__ __forceinline__ T st(C v) { return v; }\n"
        }
        "i64" => {
            "typedef long long T; typedef long long C; typedef unsigned long long U;\n\
                  #define IS_FLOAT 0\n\
                  __device__ __forceinline__ C ld(T v) { return v; }\n\
                  __device__ __forceinline__ T st(C v) { return v; }\n"
        }
        other => unreachable!("no CUDA module for {other}"),
    };
    // Integers wrap (through unsigned arithmetic: signed overflow is undefined in C++).
    let arith = if dt.is_float {
        "#define ADD(x, y) ((x) + (y))\n#define SUB(x, y) ((x) - (y))\n#define MUL(x, y) ((x) * (y))\n"
    } else {
        "#define ADD(x, y) ((C)((U)(x) + (U)(y)))\n#define SUB(x, y) ((C)((U)(x) - (U)(y)))\n\
         #define MUL(x, y) ((C)((U)(x) * (U)(y)))\n"
    };
    format!("{COMMON}\n{defs}#define VEC {}\n{arith}{BODY}", dt.vec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dtype_has_a_module() {
        for d in [
            DataType::float(32),
            DataType::float(64),
            DataType::float(16),
            DataType::bfloat16(),
            DataType::int(32),
            DataType::int(64),
        ] {
            let dt = dt_of(d).unwrap();
            let src = module_source(&dt);
            assert!(src.contains(&format!("#define VEC {}", dt.vec)));
            assert_eq!(src.contains("#define IS_FLOAT 1"), dt.is_float);
        }
        assert!(dt_of(DataType::int(8)).is_none());
    }
}
