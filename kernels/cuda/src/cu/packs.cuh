// After the dtype's prelude, for every family: the 16-byte pack of elements, the start of a row,
// and the peel to a 16-byte boundary.
struct __align__(16) Pack { T v[VEC]; };

__device__ __forceinline__ void row_start(const Lay& L, i64 r, i64& ox, i64& oo) { offsets2(L, r, ox, oo); }

// The elements before x + lo reaches a 16-byte boundary, at most hi - lo.
__device__ __forceinline__ i64 peel(const T* x, i64 lo, i64 hi) {
  i64 mis = (i64)(((u64)(x + lo) / sizeof(T)) % VEC);
  i64 head = mis ? VEC - mis : 0;
  return head < hi - lo ? head : hi - lo;
}

// E elements (a pack, or a quad of 4) held in registers (a copy, not memory: see pack_ld),
// 4-byte aligned: widened into C, and C values rounded back. 16-bit types (HALF: 1 float16,
// 2 bfloat16) work on the 32-bit words that hold two elements: bfloat16 widens by a shift or a
// mask, and from sm_80 one cvt rounds two floats into a word (element by element: two
// conversions and a merge). Kernels that are bound by instructions, not bytes (16-bit types move
// twice the elements a byte of float32), need these.
#if HALF && __CUDA_ARCH__ >= 800
// The PTX type of a word of two elements.
#if HALF == 1
#define PAIR_TYPE "f16x2"
#else
#define PAIR_TYPE "bf16x2"
#endif
// lo in the low half, hi in the high half, each rounded to nearest even.
__device__ __forceinline__ u32 round2(float lo, float hi) {
  u32 r;
  asm("cvt.rn." PAIR_TYPE ".f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
#endif

template <int E> __device__ __forceinline__ void vals_ld(const T* q, C* v) {
#if HALF == 2
  const u32* w = (const u32*)q;
  _Pragma("unroll") for (int i = 0; i < E / 2; ++i) {
    v[2 * i] = __uint_as_float(w[i] << 16);
    v[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
  }
#else
  _Pragma("unroll") for (int j = 0; j < E; ++j) v[j] = ld(q[j]);
#endif
}

template <int E> __device__ __forceinline__ void vals_st(T* q, const C* v) {
#if HALF && __CUDA_ARCH__ >= 800
  u32* w = (u32*)q;
  _Pragma("unroll") for (int i = 0; i < E / 2; ++i) w[i] = round2(v[2 * i], v[2 * i + 1]);
#else
  _Pragma("unroll") for (int j = 0; j < E; ++j) q[j] = st(v[j]);
#endif
}

// Packs by value: a pack in memory is read whole, in one 16-byte load (read in place, the helpers
// would read it a word or an element at a time).
__device__ __forceinline__ void pack_ld(const Pack q, C* v) { vals_ld<VEC>(q.v, v); }
__device__ __forceinline__ Pack pack_st(const C* v) { Pack q; vals_st<VEC>(q.v, v); return q; }

#if IS_FLOAT
// NaN-propagating maximum (one instruction from sm_80).
__device__ __forceinline__ C max_nan(C a, C b) {
#if __CUDA_ARCH__ >= 800 && !IS_F64
  C r; asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r;
#else
  return a > b || a != a ? a : b;
#endif
}

// The NaN-propagating maximum of E elements in registers; 16-bit types from sm_80 take it on
// words (max.NaN on two elements at once: a maximum is exact, so it needs no widening).
#if HALF && __CUDA_ARCH__ >= 800
__device__ __forceinline__ u32 max2(u32 a, u32 b) {
  u32 r;
  asm("max.NaN." PAIR_TYPE " %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}
#endif

template <int E> __device__ __forceinline__ C vals_max(const T* q) {
#if HALF && __CUDA_ARCH__ >= 800
  const u32* w = (const u32*)q;
  u32 a = w[0];
  _Pragma("unroll") for (int i = 1; i < E / 2; ++i) a = max2(a, w[i]);
  return max_nan(ld((T)(a & 0xffffu)), ld((T)(a >> 16)));
#else
  C m = ld(q[0]);
  _Pragma("unroll") for (int j = 1; j < E; ++j) m = max_nan(m, ld(q[j]));
  return m;
#endif
}

__device__ __forceinline__ C pack_max(const Pack q) { return vals_max<VEC>(q.v); }

// Softmax weights: EXPW(d) = exp(d) W for d = x - max <= 0, where only the ratios of the weights
// matter (out = weight / sum of weights). float32 and float64: W = 1, the accurate exp. 16-bit
// results: W = 2^64, one fused multiply-add and one ex2 with subnormals flushed (ex2 keeping
// them costs three more instructions); the 2^64 keeps every weight that a 16-bit result can
// show (down to 2^-133 of the row's sum, bfloat16's least subnormal) above the flush threshold
// 2^-126, and a sum of 2^31 weights far below float's range. Its error (d log2(e) + 64 rounds
// to 2^-18: 2.6e-6 relative) is far below a 16-bit ulp.
#if HALF
__device__ __forceinline__ float EXPW(float d) {
  return ex2_ftz(d * 1.4426950408889634f + 64.0f);  // contracted to one fma
}
#else
#define EXPW(d) FEXP(d)
#endif
#endif
