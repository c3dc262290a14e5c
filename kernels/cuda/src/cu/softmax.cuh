// Softmax along one axis of rows laid out by Lay (leading dims: x in s0, out in s1), `len`
// elements a row at strides sx / so. Variants by row length:
// - softmax_group_G_N: G lanes of a warp per row (G = 1 ... 32), N elements a lane, in registers:
//   short rows of any layout (len <= G * N <= 1024);
// - softmax_warp_N: a warp per row, N 16-byte packs a lane: contiguous aligned rows of whole packs;
//   softmax_lanes_G_N the same with G lanes a row, 32 / G rows a warp;
// - softmax_block_PK: a block per row, PK packs a thread (up to 1024 threads): medium rows;
// - softmax_online: a block per row, two passes over memory (the second from L2): a running
//   (max, sum) per thread, 16-byte packs after peeling to alignment where the row is contiguous;
//   any length, any layout;
// - softmax_smem: a block per row staged whole in shared memory: contiguous rows too long for
//   a block's registers that fit the device's shared memory (softmax_staged.cuh, with the
//   cluster variants);
// - softmax_split_stats + softmax_split_write: a row split over several blocks (few long rows):
//   each chunk's (max, sum), then each chunk merges its row's pairs and writes.
// - softmax_pipe_CN (softmax_pipe.cuh): long rows back to back pipelined through registers;
// - softmax_tile_G_N / softmax_tileh_G_N (softmax_tile.cuh): short rows back to back, staged in
//   shared memory;
//   softmax_tileq_G_N, the same computed in quads of 4 elements, are the `softmax_quads` module
//   (SOFTMAX_QUADS), a candidate compiled only where a config chooses it.
// A NaN anywhere makes the row NaN, and a row of -inf is NaN, as in PyTorch.


// The weight of a row's value or its padding (-inf, weight 0): `ok` says which. float64's exp is
// a long routine whose unconditional form spills, so padding skips it there; the others compute
// exp(-inf) = 0 rather than spend a select on every element.
#if IS_F64
#define PAD_W(d, ok) ((ok) ? EXPW(d) : (C)0)
#else
#define PAD_W(d, ok) EXPW(d)
#endif

// (max, sum of exp(x - max)) pairs, merged. A NaN maximum wins (a plain comparison would let an
// empty pair's -inf win over it and drop the NaN sum: a block of fewer than 32 warps merges
// such pairs).
__device__ __forceinline__ void ms_merge(C& m, C& s, C m2, C s2) {
  C mm = max_nan(m, m2);
  if (mm == NEG_INF) { m = mm; s = (C)0; return; }
  s = (m == NEG_INF ? (C)0 : s * FEXP(m - mm)) + (m2 == NEG_INF ? (C)0 : s2 * FEXP(m2 - mm));
  m = mm;
}

// Folds values whose maximum is pm into a running pair (the sum is of weights, EXPW): one
// rescale when the maximum grows, one exponential a value.
__device__ __forceinline__ bool ms_grow(C& m, C& s, C pm) {
  if (pm != pm) { m = pm; s = pm; return false; }  // NaN: the row is NaN
  if (pm > m) { s = m == NEG_INF ? (C)0 : s * FEXP(m - pm); m = pm; }
  return m != NEG_INF;
}
__device__ __forceinline__ void ms_add_one(C& m, C& s, C v) {
  if (ms_grow(m, s, v)) s += EXPW(v - m);
}
// The sum of a pack's weights against m, and the pack's output (its weights times inv).
__device__ __forceinline__ C pack_weight_sum(const Pack q, C m) {
  C v[VEC], s = 0;
  pack_ld(q, v);
  _Pragma("unroll") for (int j = 0; j < VEC; ++j) s += EXPW(v[j] - m);
  return s;
}
__device__ __forceinline__ Pack pack_weights(const Pack q, C m, C inv) {
  C v[VEC];
  pack_ld(q, v);
  _Pragma("unroll") for (int j = 0; j < VEC; ++j) v[j] = EXPW(v[j] - m) * inv;
  return pack_st(v);
}
__device__ __forceinline__ void ms_add_pack(C& m, C& s, const Pack q) {
  if (ms_grow(m, s, pack_max(q))) s += pack_weight_sum(q, m);
}

// Block-wide merge of every thread's pair; every thread gets the result.
__device__ __forceinline__ void block_ms(C& m, C& s) {
  __shared__ C shm[32], shs[32];
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


// This thread's running pair over elements [lo, hi) of a row (block-strided).
__device__ __forceinline__ void ms_fold(const T* x, i64 sx, i64 lo, i64 hi, int vec, C& m, C& s) {
  if (vec) {
    i64 head = peel(x, lo, hi);
    for (i64 k = lo + threadIdx.x; k < lo + head; k += blockDim.x) ms_add_one(m, s, ld(x[k]));
    i64 p0 = lo + head, np = (hi - p0) / VEC;
    const Pack* pp = (const Pack*)(x + p0);
    i64 k = threadIdx.x;
    for (; k + blockDim.x < np; k += 2 * blockDim.x) {
      Pack q0 = pp[k], q1 = pp[k + blockDim.x];
      ms_add_pack(m, s, q0);
      ms_add_pack(m, s, q1);
    }
    for (; k < np; k += blockDim.x) ms_add_pack(m, s, pp[k]);
    for (i64 t = p0 + np * VEC + threadIdx.x; t < hi; t += blockDim.x) ms_add_one(m, s, ld(x[t]));
    return;
  }
  for (i64 k = lo + threadIdx.x; k < hi; k += blockDim.x) ms_add_one(m, s, ld(x[k * sx]));
}

// Writes EXPW(x - m) * inv over elements [lo, hi) of a row (block-strided).
__device__ __forceinline__ void sm_write(const T* x, T* o, i64 sx, i64 so, i64 lo, i64 hi, int vec, C m, C inv) {
  if (vec) {
    i64 head = peel(x, lo, hi);
    for (i64 k = lo + threadIdx.x; k < lo + head; k += blockDim.x) o[k] = st(EXPW(ld(x[k]) - m) * inv);
    i64 p0 = lo + head, np = (hi - p0) / VEC;
    const Pack* pp = (const Pack*)(x + p0);
    Pack* po = (Pack*)(o + p0);
    for (i64 k = threadIdx.x; k < np; k += blockDim.x) {
      const Pack r = pack_weights(pp[k], m, inv);
      st_stream(po + k, *(const U4*)&r);
    }
    for (i64 t = p0 + np * VEC + threadIdx.x; t < hi; t += blockDim.x) o[t] = st(EXPW(ld(x[t]) - m) * inv);
    return;
  }
  for (i64 k = lo + threadIdx.x; k < hi; k += blockDim.x) o[k * so] = st(EXPW(ld(x[k * sx]) - m) * inv);
}

#if !SOFTMAX_QUADS
extern "C" __global__ void softmax_online(u64 px, u64 po, i64 rows, i64 len, i64 sx, i64 so, Lay L, int vec) {
  for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
    i64 ox, oo; row_start(L, r, ox, oo);
    const T* x = (const T*)px + ox; T* o = (T*)po + oo;
    C m = NEG_INF, s = 0;
    ms_fold(x, sx, 0, len, vec, m, s);
    block_ms(m, s);
    sm_write(x, o, sx, so, 0, len, vec, m, (C)1 / s);
  }
}

// Split rows: work item w = (row, chunk); pairs go to part[w] (two C values).
extern "C" __global__ void softmax_split_stats(u64 px, u64 ppart, i64 rows, i64 len, i64 sx, Lay L, i64 chunks, i64 chunk, int vec) {
  for (i64 w = blockIdx.x; w < rows * chunks; w += gridDim.x) {
    i64 r = w / chunks, c = w % chunks, ox, oo;
    row_start(L, r, ox, oo);
    i64 lo = c * chunk, hi = lo + chunk < len ? lo + chunk : len;
    C m = NEG_INF, s = 0;
    ms_fold((const T*)px + ox, sx, lo, hi, vec, m, s);
    block_ms(m, s);
    if (threadIdx.x == 0) { ((C*)ppart)[2 * w] = m; ((C*)ppart)[2 * w + 1] = s; }
    __syncthreads();
  }
}

extern "C" __global__ void softmax_split_write(u64 px, u64 po, u64 ppart, i64 rows, i64 len, i64 sx, i64 so, Lay L, i64 chunks, i64 chunk, int vec) {
  for (i64 w = blockIdx.x; w < rows * chunks; w += gridDim.x) {
    i64 r = w / chunks, c = w % chunks, ox, oo;
    row_start(L, r, ox, oo);
    C m = NEG_INF, s = 0;
    for (i64 k = threadIdx.x; k < chunks; k += blockDim.x) {
      const C* p = (const C*)ppart + 2 * (r * chunks + k);
      ms_merge(m, s, p[0], p[1]);
    }
    block_ms(m, s);
    i64 lo = c * chunk, hi = lo + chunk < len ? lo + chunk : len;
    sm_write((const T*)px + ox, (T*)po + oo, sx, so, lo, hi, vec, m, (C)1 / s);
  }
}
#endif

// G lanes per row, N elements a lane (k = lane + j G), any strides.
template <int G, int N> __device__ __forceinline__ void softmax_group(u64 px, u64 po, i64 rows, i64 len, i64 sx, i64 so, const Lay& L) {
  const int lane = threadIdx.x & (G - 1);
  const i64 per = blockDim.x / G, first = threadIdx.x / G;
  for (i64 r = (i64)blockIdx.x * per + first; r - first < rows; r += (i64)gridDim.x * per) {
    const bool live = r < rows;
    i64 ox = 0, oo = 0;
    if (live) row_start(L, r, ox, oo);
    const T* x = (const T*)px + ox; T* o = (T*)po + oo;
    C v[N], m = NEG_INF;
    _Pragma("unroll") for (int j = 0; j < N; ++j) {
      i64 k = lane + j * G;
      v[j] = (live && k < len) ? ld(x[k * sx]) : NEG_INF;
      m = max_nan(m, v[j]);
    }
    m = warp_max(m, G);
    C s = 0;
    // Padding (-inf) weighs 0; a row of -inf is NaN throughout, as in PyTorch.
    _Pragma("unroll") for (int j = 0; j < N; ++j) { v[j] = PAD_W(v[j] - m, live && lane + j * G < len); s += v[j]; }
    s = warp_sum(s, G);
    C inv = (C)1 / s;
    _Pragma("unroll") for (int j = 0; j < N; ++j) {
      i64 k = lane + j * G;
      if (live && k < len) o[k * so] = st(v[j] * inv);
    }
  }
}

// G lanes of a warp per row (a warp per row where G is 32), N packs a lane: contiguous aligned
// rows of len / VEC <= G N packs. With G < 32 a warp holds 32 / G rows at once: a lane keeps N
// packs of each of its loads in flight rather than one row's, and the G-lane reductions of the
// warp's rows run side by side (rows of one pack a lane, 16-bit rows of 256, are bound by the
// bytes a warp has in flight).
template <int N, int G = 32> __device__ __forceinline__ void softmax_warp(u64 px, u64 po, i64 rows, i64 len, const Lay& L) {
  const int lane = threadIdx.x & (G - 1);
  const i64 per = blockDim.x / G, first = threadIdx.x / G, nv = len / VEC;
  for (i64 r = (i64)blockIdx.x * per + first; r - first < rows; r += (i64)gridDim.x * per) {
    const bool live = r < rows;
    i64 ox = 0, oo = 0;
    if (live) row_start(L, r, ox, oo);
    const Pack* x = (const Pack*)((const T*)px + ox);
    Pack* o = (Pack*)((T*)po + oo);
    C v[N][VEC], m = NEG_INF;
    _Pragma("unroll") for (int p = 0; p < N; ++p) {
      i64 k = lane + p * G;
      if (live && k < nv) {
        const Pack q = x[k];
        pack_ld(q, v[p]);
        m = max_nan(m, pack_max(q));
      } else {
        _Pragma("unroll") for (int j = 0; j < VEC; ++j) v[p][j] = NEG_INF;
      }
    }
    m = warp_max(m, G);
    C s = 0;
    // Padding (-inf) weighs 0; a row of -inf is NaN throughout, as in PyTorch.
    _Pragma("unroll") for (int p = 0; p < N; ++p)
      _Pragma("unroll") for (int j = 0; j < VEC; ++j) { v[p][j] = PAD_W(v[p][j] - m, live && lane + p * G < nv); s += v[p][j]; }
    s = warp_sum(s, G);
    C inv = (C)1 / s;
    _Pragma("unroll") for (int p = 0; p < N; ++p) {
      i64 k = lane + p * G;
      if (live && k < nv) {
        _Pragma("unroll") for (int j = 0; j < VEC; ++j) v[p][j] *= inv;
        o[k] = pack_st(v[p]);
      }
    }
  }
}

// A block per row, PK packs a thread, in registers: each element read once, exponentiated once,
// written once (contiguous aligned rows of whole packs, len / VEC <= PK * blockDim). One block
// reduction: each thread's (max, sum of exp(x - max)) pair, merged; a thread's values are then
// rescaled by exp(its max - the row's max) / the row's sum.
template <int PK> __device__ __forceinline__ void softmax_block(u64 px, u64 po, i64 rows, i64 len, const Lay& L) {
  const i64 nv = len / VEC;
  for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
    i64 ox, oo; row_start(L, r, ox, oo);
    const Pack* x = (const Pack*)((const T*)px + ox);
    Pack* o = (Pack*)((T*)po + oo);
    C v[PK][VEC], m = NEG_INF;
    _Pragma("unroll") for (int p = 0; p < PK; ++p) {
      i64 k = threadIdx.x + (i64)p * blockDim.x;
      if (k < nv) {
        const Pack q = x[k];
        pack_ld(q, v[p]);
        m = max_nan(m, pack_max(q));
      } else {
        _Pragma("unroll") for (int j = 0; j < VEC; ++j) v[p][j] = NEG_INF;
      }
    }
    // Weights against this thread's maximum; padding (-inf) weighs 0, and so does everything
    // of a thread whose elements are all -inf (against 0, not -inf - -inf).
    const C mt = m == NEG_INF ? (C)0 : m;
    C s = 0;
    _Pragma("unroll") for (int p = 0; p < PK; ++p)
      _Pragma("unroll") for (int j = 0; j < VEC; ++j) { v[p][j] = PAD_W(v[p][j] - mt, threadIdx.x + (i64)p * blockDim.x < nv); s += v[p][j]; }
    C rm = m, rs = s;
    block_ms(rm, rs);
    // A fully masked row has rm = -inf and rs = 0: 0 / 0, NaN, as in PyTorch.
    C scale = (m == NEG_INF ? (C)0 : FEXP(m - rm)) / rs;
    _Pragma("unroll") for (int p = 0; p < PK; ++p) {
      i64 k = threadIdx.x + (i64)p * blockDim.x;
      if (k < nv) {
        _Pragma("unroll") for (int j = 0; j < VEC; ++j) v[p][j] *= scale;
        o[k] = pack_st(v[p]);
      }
    }
  }
}

#if !SOFTMAX_QUADS
// Launched with 256 threads; the bound (blocks an SM) keeps 64 registers a thread, 85 for the
// largest group variant and 128 for the largest warp variant.
#define SOFTMAX_GROUP(G, N, B) \
extern "C" __global__ void __launch_bounds__(256, B) softmax_group_##G##_##N(u64 px, u64 po, i64 rows, i64 len, i64 sx, i64 so, Lay L) { softmax_group<G, N>(px, po, rows, len, sx, so, L); }
SOFTMAX_GROUP(1, 1, 4)
SOFTMAX_GROUP(1, 2, 4)
SOFTMAX_GROUP(1, 4, 4)
SOFTMAX_GROUP(2, 4, 4)
SOFTMAX_GROUP(4, 4, 4)
SOFTMAX_GROUP(8, 4, 4)
SOFTMAX_GROUP(16, 4, 4)
SOFTMAX_GROUP(32, 4, 4)
SOFTMAX_GROUP(32, 8, 4)
SOFTMAX_GROUP(32, 16, 4)
SOFTMAX_GROUP(32, 32, 3)

#define SOFTMAX_WARP(N, B) \
extern "C" __global__ void __launch_bounds__(256, B) softmax_warp_##N(u64 px, u64 po, i64 rows, i64 len, Lay L) { softmax_warp<N>(px, po, rows, len, L); }
SOFTMAX_WARP(1, 4)
SOFTMAX_WARP(2, 4)
SOFTMAX_WARP(4, 4)
SOFTMAX_WARP(8, 2)
// Several rows a warp (`lane_packs`): G lanes a row, N packs a lane.
#define SOFTMAX_LANES(G, N) \
extern "C" __global__ void __launch_bounds__(256, 4) softmax_lanes_##G##_##N(u64 px, u64 po, i64 rows, i64 len, Lay L) { softmax_warp<N, G>(px, po, rows, len, L); }
SOFTMAX_LANES(4, 2)
SOFTMAX_LANES(4, 4)
SOFTMAX_LANES(8, 2)
SOFTMAX_LANES(8, 4)
SOFTMAX_LANES(16, 2)
SOFTMAX_LANES(16, 4)

// The bound keeps every variant launchable at 1024 threads (at most 64 registers a thread).
#define SOFTMAX_BLOCK(PK) \
extern "C" __global__ void __launch_bounds__(1024) softmax_block_##PK(u64 px, u64 po, i64 rows, i64 len, Lay L) { softmax_block<PK>(px, po, rows, len, L); }
SOFTMAX_BLOCK(1)
SOFTMAX_BLOCK(2)
SOFTMAX_BLOCK(4)
SOFTMAX_BLOCK(8)
#endif
