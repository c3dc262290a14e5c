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
//   a block's registers that fit the device's shared memory;
// - softmax_split_stats + softmax_split_write: a row split over several blocks (few long rows):
//   each chunk's (max, sum), then each chunk merges its row's pairs and writes.
// - softmax_pipe_CN (softmax_pipe.cuh): long rows back to back pipelined through registers;
// - softmax_tile_G_N / softmax_tileh_G_N: short rows back to back, staged in shared memory;
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


// A block-wide NaN-propagating maximum; every thread gets it. `sh` holds 32 values.
__device__ __forceinline__ C block_max_nan(C v, C* sh) {
  int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  for (int o = 16; o > 0; o >>= 1) v = max_nan(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();
  if (lane == 0) sh[w] = v;
  __syncthreads();
  v = lane < nw ? sh[lane] : NEG_INF;
  for (int o = 16; o > 0; o >>= 1) v = max_nan(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Rows staged whole in shared memory (`softmax_smem`, dynamic shared memory of the row plus a
// pack): a block per row copies it in with 16-byte asynchronous copies (every pack in flight at
// once) whatever its alignment, then reads it three times from there: the maximum, the sum of
// weights, the output. One read of global memory, like the register variants, for rows too
// long for a block's registers (the online variant reads twice, the second time from L2 only
// when it still holds the row), and several blocks an SM where the shared memory allows, so
// that one row's copy overlaps another's arithmetic. Contiguous rows (x and out may differ in
// alignment phase: out is then written element by element).
//
// `softmax_cluster_CN` (sm_90): rows longer than a block's shared memory, a cluster of CN blocks
// a row, each staging a chunk of whole packs (the first also the head before x's first 16-byte
// boundary, the last the tail); the blocks' maxima and sums are exchanged through distributed
// shared memory (each block reads the others' with ld.shared::cluster after a cluster barrier).

// The row's maximum (MAX 1) or sum from each block's: a cluster's blocks through `slot` (this
// block's, in shared memory), every thread reading all CN.
template <int CN, int MAX> __device__ __forceinline__ C cluster_combine(C v, C* slot) {
#if __CUDA_ARCH__ >= 900
  if (CN > 1) {
    if (threadIdx.x == 0) *slot = v;
    cluster_sync();
    v = MAX ? NEG_INF : (C)0;
    _Pragma("unroll") for (int q = 0; q < CN; ++q) {
      const C u = ld_cluster(slot, q);
      v = MAX ? max_nan(v, u) : v + u;
    }
  }
#endif
  return v;
}

__device__ __forceinline__ int imin(int a, int b) { return a < b ? a : b; }
__device__ __forceinline__ int imax(int a, int b) { return a > b ? a : b; }

// The bytes of dynamic shared memory this launch has.
__device__ __forceinline__ u32 dynamic_smem_bytes() {
  u32 r;
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(r));
  return r;
}

template <int CN, int PART = 0> __device__ __forceinline__ void softmax_staged(u64 px, u64 po, i64 rows, i64 len, const Lay& L) {
  extern __shared__ __align__(16) unsigned char smem_row[];
  __shared__ C red[32], slots[2];
  T* sh = (T*)smem_row;
  const int n = (int)len, t0 = threadIdx.x, nt = blockDim.x, c = CN > 1 ? (int)(blockIdx.x % CN) : 0;
  // Elements the shared memory holds: the whole chunk and a pack, or (PART: softmax_cluster_part_8,
  // chunks longer than two blocks an SM can stage) its first packs, the others read from
  // memory each pass (from L2 after the first: a small remainder a block). A separate instance,
  // since the general one's registers would cost the whole-row kernels blocks an SM.
  const int cap = PART ? (int)(dynamic_smem_bytes() / sizeof(T)) : 0;
  for (i64 r = blockIdx.x / CN; r < rows; r += gridDim.x / CN) {
    i64 ox, oo; row_start(L, r, ox, oo);
    const T* x = (const T*)px + ox; T* o = (T*)po + oo;
    // This block's elements [lo, hi): the first block's start at 0, the others' on 16-byte
    // boundaries of x, `cp` packs each. sh[k - lo + mis] holds x[k], so the packs of x land
    // on packs of sh.
    const int head0 = (int)peel(x, 0, len), cp = ((n - head0) / VEC + CN - 1) / CN;
    const int lo = c == 0 ? 0 : imin(n, head0 + c * cp * VEC);
    const int hi = c == CN - 1 ? n : imin(n, head0 + (c + 1) * cp * VEC);
    const int mis = c == 0 ? (int)(((u64)x / sizeof(T)) % VEC) : 0;
    const int head = c == 0 ? head0 : 0, np = (hi - lo - head) / VEC, tail = lo + head + np * VEC;
    // Packs [0, ns) staged, [ns, np) read from x; the tail staged only after every pack.
    const int ns = PART ? imax(0, imin(np, (cap - mis - head) / VEC)) : np;
    const bool tail_in = !PART || ns == np;
    T* base = sh + mis - lo;  // base[k] holds x[k]
    const Pack* xp = (const Pack*)(x + lo + head);
    Pack* sp = (Pack*)(base + lo + head);
    for (int k = t0; k < ns; k += nt) cp_async16(sp + k, xp + k);
    for (int k = lo + t0; k < lo + head; k += nt) base[k] = x[k];
    if (tail_in) for (int k = tail + t0; k < hi; k += nt) base[k] = x[k];
    const T* tb = tail_in ? base : x;  // where the tail is read
    C m = NEG_INF;
    if (PART) for (int k = ns + t0; k < np; k += nt) m = max_nan(m, pack_max(xp[k]));
    cp_async_wait_all();
    __syncthreads();
    for (int k = t0; k < ns; k += nt) m = max_nan(m, pack_max(sp[k]));
    for (int k = lo + t0; k < lo + head; k += nt) m = max_nan(m, ld(base[k]));
    for (int k = tail + t0; k < hi; k += nt) m = max_nan(m, ld(tb[k]));
    m = cluster_combine<CN, 1>(block_max_nan(m, red), &slots[0]);
    // A row of -inf has m = -inf: every weight is NaN, and so the row, as in PyTorch.
    C s = 0;
    for (int k = t0; k < ns; k += nt) s += pack_weight_sum(sp[k], m);
    if (PART) for (int k = ns + t0; k < np; k += nt) s += pack_weight_sum(xp[k], m);
    for (int k = lo + t0; k < lo + head; k += nt) s += EXPW(ld(base[k]) - m);
    for (int k = tail + t0; k < hi; k += nt) s += EXPW(ld(tb[k]) - m);
    s = cluster_combine<CN, 0>(block_sum(s, red), &slots[1]);
    const C inv = (C)1 / s;
    if ((int)(((u64)o / sizeof(T)) % VEC) == (int)(((u64)x / sizeof(T)) % VEC)) {
      Pack* op = (Pack*)(o + lo + head);
      for (int k = t0; k < ns; k += nt) {
        const Pack q = pack_weights(sp[k], m, inv);
        st_stream(op + k, *(const U4*)&q);
      }
      if (PART) for (int k = ns + t0; k < np; k += nt) {
        const Pack q = pack_weights(xp[k], m, inv);
        st_stream(op + k, *(const U4*)&q);
      }
      for (int k = lo + t0; k < lo + head; k += nt) o[k] = st(EXPW(ld(base[k]) - m) * inv);
      for (int k = tail + t0; k < hi; k += nt) o[k] = st(EXPW(ld(tb[k]) - m) * inv);
    } else {
      // out at another phase than x (element by element): staged elements from sh, the rest
      // from x.
      const int staged_hi = tail_in ? hi : lo + head + ns * VEC;
      if (PART) for (int k = lo + t0; k < hi; k += nt) o[k] = st(EXPW(ld(k < staged_hi ? base[k] : x[k]) - m) * inv);
      else for (int k = lo + t0; k < hi; k += nt) o[k] = st(EXPW(ld(base[k]) - m) * inv);
    }
    __syncthreads();  // the next row's copy overwrites sh
  }
#if __CUDA_ARCH__ >= 900
  if (CN > 1) cluster_sync();  // no block leaves while another may read its slots
#endif
}

extern "C" __global__ void __launch_bounds__(1024) softmax_smem(u64 px, u64 po, i64 rows, i64 len, Lay L) {
  softmax_staged<1>(px, po, rows, len, L);
}
// Only where clusters exist: NVRTC rejects __cluster_dims__ before sm_90 (the planner chooses
// these only on such devices).
#if __CUDA_ARCH__ >= 900
#define SOFTMAX_CLUSTER(CN) \
extern "C" __global__ void __launch_bounds__(1024) __cluster_dims__(CN, 1, 1) softmax_cluster_##CN(u64 px, u64 po, i64 rows, i64 len, Lay L) { softmax_staged<CN>(px, po, rows, len, L); }
SOFTMAX_CLUSTER(2)
SOFTMAX_CLUSTER(4)
SOFTMAX_CLUSTER(8)
extern "C" __global__ void __launch_bounds__(1024) __cluster_dims__(8, 1, 1) softmax_cluster_part_8(u64 px, u64 po, i64 rows, i64 len, Lay L) { softmax_staged<8, 1>(px, po, rows, len, L); }
#endif
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

// Short rows stored back to back (row stride = len in x and out): a block stages a tile of R
// whole rows, R * len contiguous elements, in shared memory with 16-byte asynchronous copies
// (every pack of the tile in flight at once, not one a thread at a time) whatever the rows'
// own alignment, G lanes a row compute from there (N elements a lane), and the tile goes back
// with 16-byte stores. Many packs are in flight per thread, unlike a lane per few elements read
// straight from memory. Shared element of global element g: g - e0 + mis (mis: x + e0's elements
// past a 16-byte boundary), so whole packs of x land on whole packs of the tile.
// Tiles of TB bytes: 32 KiB with 256 threads (`softmax_tile_G_N`), or 16 KiB with 128
// threads (`softmax_tileh_G_N`: twice the blocks an SM, each phase of a tile half as long).
// 4 elements (8 bytes for 16-bit types, 16 for float32), the unit of the quad tiles.
struct __align__(4 * sizeof(T)) Quad { T v[4]; };

// The rows of a staged tile (`softmax_tileq_G_N`): G lanes a row, N quads a lane, rows of whole
// quads starting on quad boundaries in shared memory (len % 4 == 0, x and out aligned to 4
// elements). Per element: a quarter of a shared load and of a store, one maximum, one
// exponential, one add, one multiply and the conversions, with int indices; the scalar tiles
// spend a load, a store, a NaN test and 64-bit index arithmetic on each.
template <int G, int N> __device__ __forceinline__ void tile_rows_quad(T* rows0, int nr, int len) {
  const int lane = threadIdx.x & (G - 1), per = blockDim.x / G, first = threadIdx.x / G, nq = len / 4;
  for (int i0 = 0; i0 < nr; i0 += per) {
    const int i = i0 + first;
    const bool live = i < nr;
    Quad* row = (Quad*)(rows0 + (live ? i : 0) * len);
    C v[N][4], m = NEG_INF;
    _Pragma("unroll") for (int j = 0; j < N; ++j) {
      const int k = lane + j * G;
      if (live && k < nq) {
        const Quad q = row[k];
        vals_ld<4>(q.v, v[j]);
        m = max_nan(m, vals_max<4>(q.v));
      } else {
        _Pragma("unroll") for (int e = 0; e < 4; ++e) v[j][e] = NEG_INF;
      }
    }
    m = warp_max(m, G);
    C s = 0;
    _Pragma("unroll") for (int j = 0; j < N; ++j)
      _Pragma("unroll") for (int e = 0; e < 4; ++e) { v[j][e] = PAD_W(v[j][e] - m, live && lane + j * G < nq); s += v[j][e]; }
    s = warp_sum(s, G);
    const C inv = (C)1 / s;
    _Pragma("unroll") for (int j = 0; j < N; ++j) {
      const int k = lane + j * G;
      if (live && k < nq) {
        Quad q;
        _Pragma("unroll") for (int e = 0; e < 4; ++e) v[j][e] *= inv;
        vals_st<4>(q.v, v[j]);
        row[k] = q;
      }
    }
  }
}

template <int G, int N, int TB, int Q> __device__ __forceinline__ void softmax_tile(u64 px, u64 po, i64 rows, i64 len, i64 R) {
  __shared__ __align__(16) T sh[TB / (int)sizeof(T) + VEC];
  const T* x = (const T*)px; T* o = (T*)po;
  const i64 tiles = (rows + R - 1) / R;
  for (i64 t = blockIdx.x; t < tiles; t += gridDim.x) {
    const i64 r0 = t * R, nr = rows - r0 < R ? rows - r0 : R;
    const i64 e0 = r0 * len, e1 = e0 + nr * len;
    const int mis = (int)(((u64)(x + e0) / sizeof(T)) % VEC);
    {
      const i64 head = peel(x, e0, e1), p0 = e0 + head, np = (e1 - p0) / VEC;
      for (i64 k = e0 + threadIdx.x; k < p0; k += blockDim.x) sh[k - e0 + mis] = x[k];
      const Pack* xp = (const Pack*)(x + p0);
      Pack* sp = (Pack*)(sh + (p0 - e0 + mis));
      for (i64 k = threadIdx.x; k < np; k += blockDim.x) cp_async16(sp + k, xp + k);
      for (i64 k = p0 + np * VEC + threadIdx.x; k < e1; k += blockDim.x) sh[k - e0 + mis] = x[k];
      cp_async_wait_all();
    }
    __syncthreads();
    if (Q == 4) tile_rows_quad<G, N>(sh + mis, (int)nr, (int)len);
    else {
      const int lane = threadIdx.x & (G - 1), per = blockDim.x / G, first = threadIdx.x / G;
      for (i64 i0 = 0; i0 < nr; i0 += per) {
        const i64 i = i0 + first;
        const bool live = i < nr;
        T* row = sh + mis + (live ? i : 0) * len;
        C v[N], m = NEG_INF;
        _Pragma("unroll") for (int j = 0; j < N; ++j) {
          const i64 k = lane + j * G;
          v[j] = (live && k < len) ? ld(row[k]) : NEG_INF;
          m = max_nan(m, v[j]);
        }
        m = warp_max(m, G);
        C s = 0;
        _Pragma("unroll") for (int j = 0; j < N; ++j) { v[j] = PAD_W(v[j] - m, live && lane + j * G < len); s += v[j]; }
        s = warp_sum(s, G);
        const C inv = (C)1 / s;
        _Pragma("unroll") for (int j = 0; j < N; ++j) {
          const i64 k = lane + j * G;
          if (live && k < len) row[k] = st(v[j] * inv);
        }
      }
    }
    __syncthreads();
    if ((int)(((u64)(o + e0) / sizeof(T)) % VEC) == mis) {
      const i64 head = peel(o, e0, e1), p0 = e0 + head, np = (e1 - p0) / VEC;
      for (i64 k = e0 + threadIdx.x; k < p0; k += blockDim.x) o[k] = sh[k - e0 + mis];
      Pack* op = (Pack*)(o + p0);
      const Pack* sp = (const Pack*)(sh + (p0 - e0 + mis));
      for (i64 k = threadIdx.x; k < np; k += blockDim.x) st_stream(op + k, *(const U4*)&sp[k]);
      for (i64 k = p0 + np * VEC + threadIdx.x; k < e1; k += blockDim.x) o[k] = sh[k - e0 + mis];
    } else {
      for (i64 k = e0 + threadIdx.x; k < e1; k += blockDim.x) o[k] = sh[k - e0 + mis];
    }
    __syncthreads();
  }
}

#if !SOFTMAX_QUADS
#define SOFTMAX_TILE(G, N) \
extern "C" __global__ void __launch_bounds__(256) softmax_tile_##G##_##N(u64 px, u64 po, i64 rows, i64 len, i64 R) { softmax_tile<G, N, 32768, 1>(px, po, rows, len, R); } \
extern "C" __global__ void __launch_bounds__(128) softmax_tileh_##G##_##N(u64 px, u64 po, i64 rows, i64 len, i64 R) { softmax_tile<G, N, 16384, 1>(px, po, rows, len, R); }
SOFTMAX_TILE(1, 2)
SOFTMAX_TILE(1, 4)
SOFTMAX_TILE(1, 8)
SOFTMAX_TILE(2, 8)
SOFTMAX_TILE(4, 8)
SOFTMAX_TILE(8, 8)
SOFTMAX_TILE(16, 8)
SOFTMAX_TILE(32, 8)
SOFTMAX_TILE(32, 16)
SOFTMAX_TILE(32, 32)
#endif

// Quad tiles (16 KiB, 128 threads): G lanes a row, N quads a lane; the `softmax_quads` module.
#if SOFTMAX_QUADS
#define SOFTMAX_TILEQ(G, N) \
extern "C" __global__ void __launch_bounds__(128) softmax_tileq_##G##_##N(u64 px, u64 po, i64 rows, i64 len, i64 R) { softmax_tile<G, N, 16384, 4>(px, po, rows, len, R); }
SOFTMAX_TILEQ(1, 2)
SOFTMAX_TILEQ(1, 4)
SOFTMAX_TILEQ(1, 8)
SOFTMAX_TILEQ(2, 2)
SOFTMAX_TILEQ(2, 4)
SOFTMAX_TILEQ(2, 8)
SOFTMAX_TILEQ(4, 2)
SOFTMAX_TILEQ(4, 4)
SOFTMAX_TILEQ(4, 8)
SOFTMAX_TILEQ(8, 2)
SOFTMAX_TILEQ(8, 4)
SOFTMAX_TILEQ(8, 8)
SOFTMAX_TILEQ(16, 2)
SOFTMAX_TILEQ(16, 4)
SOFTMAX_TILEQ(16, 8)
SOFTMAX_TILEQ(32, 2)
SOFTMAX_TILEQ(32, 4)
SOFTMAX_TILEQ(32, 8)
#endif
