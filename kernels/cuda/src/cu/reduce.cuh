// Reductions on any axes: sum (0), mean (1), max (2), min (3), argmax (4), as template R.
// The host collapses the kept dims (x and out strides) and the reduced dims (x strides; the
// last is the inner run) into RLay. Rows: a group of G lanes, or a block, per (output, chunk);
// the run is read in 16-byte packs when contiguous. Columns: a thread per output, the reduced
// elements strided (neighbouring outputs are neighbours in memory), VEC outputs a thread from
// 16-byte loads where the layout allows (with 8 threads a pack of outputs, merged in shared
// memory, where there are at least 32 such packs). Long reductions split into
// chunks whose partial results (Acc) a second kernel combines (or, for a block per chunk where
// the tuning asks, the last block of an output).

struct RLay { int nk; int nr; i64 kshape[MAXD]; i64 kx[MAXD]; i64 ko[MAXD]; i64 rshape[MAXD]; i64 rx[MAXD]; };

// A partial result: the value (in ACC; double between kernels) and argmax's index.
struct Acc { ACC v; i64 i; };
struct PAcc { double v; i64 i; };

__device__ __forceinline__ bool is_nan(ACC v) { return v != v; }

template <int R> __device__ __forceinline__ Acc acc_init() {
  Acc a; a.i = 0x7fffffffffffffffLL;
  a.v = (R == 2 || R == 4) ? (ACC)NEG_INF : (R == 3 ? -(ACC)NEG_INF : (ACC)0);
  return a;
}

// Merges b into a. Maximum and minimum propagate NaN; argmax takes NaN as the largest value and
// the smaller index among equals, so the merge order does not matter.
template <int R> __device__ __forceinline__ void acc_merge(Acc& a, ACC v, i64 i) {
  if (R <= 1) { a.v += v; return; }
  if (R == 2) { if (is_nan(v) || v > a.v) a.v = v; return; }
  if (R == 3) { if (is_nan(v) || v < a.v) a.v = v; return; }
  bool an = is_nan(a.v), bn = is_nan(v);
  bool better = (bn && !an) || (!an && !bn && v > a.v) || ((bn == an) && (v == a.v || bn) && i < a.i);
  if (better) { a.v = v; a.i = i; }
}

template <int R> __device__ __forceinline__ void acc_shfl(Acc& a, int width) {
  for (int o = width >> 1; o > 0; o >>= 1) {
    ACC v = __shfl_xor_sync(0xffffffffu, a.v, o);
    i64 i = __shfl_xor_sync(0xffffffffu, a.i, o);
    acc_merge<R>(a, v, i);
  }
}

// A block-wide merge; thread 0 gets the result.
template <int R> __device__ __forceinline__ Acc acc_block(Acc a) {
  __shared__ ACC shv[32];
  __shared__ i64 shi[32];
  int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  acc_shfl<R>(a, 32);
  __syncthreads();
  if (lane == 0) { shv[w] = a.v; shi[w] = a.i; }
  __syncthreads();
  if (w == 0) {
    a = acc_init<R>();
    if (lane < nw) { a.v = shv[lane]; a.i = shi[lane]; }
    acc_shfl<R>(a, 32);
  }
  return a;
}

// The kept output `o`'s offsets in x and out.
__device__ __forceinline__ void kept_offsets(const RLay& L, i64 o, i64& ox, i64& oo) {
  if (L.nk == 1) { ox = o * L.kx[0]; oo = o * L.ko[0]; return; }
  ox = 0; oo = 0;
  for (int d = L.nk - 1; d >= 0; --d) {
    i64 c = o % L.kshape[d]; o /= L.kshape[d];
    ox += c * L.kx[d]; oo += c * L.ko[d];
  }
}

// The offset in x of the q-th run (the reduced dims but the last).
__device__ __forceinline__ i64 run_offset(const RLay& L, i64 q) {
  if (L.nr <= 2) return L.nr == 2 ? q * L.rx[0] : 0;
  i64 off = 0;
  for (int d = L.nr - 2; d >= 0; --d) { i64 c = q % L.rshape[d]; q /= L.rshape[d]; off += c * L.rx[d]; }
  return off;
}

template <int R> __device__ __forceinline__ void store_result(u64 po, i64 oo, Acc a, i64 count) {
  if (R == 4) { ((i64*)po)[oo] = a.i; return; }
  ACC v = a.v;
  if (R == 1) v = v / (ACC)count;
  ((T*)po)[oo] = st((C)v);
}

// Merges a pack of elements (indices i0 ...) into a. argmax first finds the pack's own maximum
// and its first position (NaN largest; among equals the first stays), then merges once: the
// index arithmetic and the merge's tie rules run once a pack, not once an element.
template <int R> __device__ __forceinline__ void merge_pack(Acc& a, const Pack& q, i64 i0) {
  if (R != 4) {
    _Pragma("unroll") for (int j = 0; j < VEC; ++j) acc_merge<R>(a, (ACC)ld(q.v[j]), i0 + j);
    return;
  }
  ACC m = (ACC)ld(q.v[0]);
  int mj = 0;
  _Pragma("unroll") for (int j = 1; j < VEC; ++j) {
    ACC x = (ACC)ld(q.v[j]);
    if (x > m || (is_nan(x) && !is_nan(m))) { m = x; mj = j; }
  }
  acc_merge<R>(a, m, i0 + mj);
}

// Folds elements [lo, hi) of a run of stride rs at x (index base + k) with `lanes` threads
// numbered `lane`; 16-byte packs where the run is contiguous, 4 at a time. PF 1: the next 4
// packs are loaded before this step's are merged (8 in flight): left to itself the compiler
// issues two of a step's loads, merges them, then the other two (its machine code), so a thread
// keeps about two packs in flight.
template <int R, int PF = 0> __device__ __forceinline__ void fold_run(Acc& a, const T* x, i64 rs, i64 lo, i64 hi, i64 base, int lane, int lanes, bool vec) {
  if (vec && rs == 1) {
    // Peel to a 16-byte boundary, then packs, then the tail.
    i64 head = peel(x, lo, hi);
    for (i64 k = lo + lane; k < lo + head; k += lanes) acc_merge<R>(a, (ACC)ld(x[k]), base + k);
    i64 p0 = lo + head, np = (hi - p0) / VEC;
    const Pack* pp = (const Pack*)(x + p0);
    // Four accumulators, one per pack of a step: the merges of the four packs are independent
    // chains (argmax's compare-and-select chain is what bounds it otherwise), joined at the end;
    // argmax's tie rule (the smaller index) makes the join order-free.
    i64 k = lane;
    Acc b[4];
    _Pragma("unroll") for (int u = 0; u < 4; ++u) b[u] = acc_init<R>();
    if (PF && k + 3 * lanes < np) {
      Pack q[4];
      _Pragma("unroll") for (int u = 0; u < 4; ++u) q[u] = pp[k + u * lanes];
      for (;;) {
        const i64 kn = k + 4 * lanes;
        const bool more = kn + 3 * lanes < np;
        Pack n[4];
        if (more) { _Pragma("unroll") for (int u = 0; u < 4; ++u) n[u] = pp[kn + u * lanes]; }
        _Pragma("unroll") for (int u = 0; u < 4; ++u) merge_pack<R>(b[u], q[u], base + p0 + (k + u * lanes) * VEC);
        k = kn;
        if (!more) break;
        _Pragma("unroll") for (int u = 0; u < 4; ++u) q[u] = n[u];
      }
    }
    for (; !PF && k + 3 * lanes < np; k += 4 * lanes) {
      Pack q[4];
      _Pragma("unroll") for (int u = 0; u < 4; ++u) q[u] = pp[k + u * lanes];
      _Pragma("unroll") for (int u = 0; u < 4; ++u) merge_pack<R>(b[u], q[u], base + p0 + (k + u * lanes) * VEC);
    }
    for (; k < np; k += lanes) merge_pack<R>(b[0], pp[k], base + p0 + k * VEC);
    _Pragma("unroll") for (int u = 0; u < 4; ++u) acc_merge<R>(a, b[u].v, b[u].i);
    for (i64 t = p0 + np * VEC + lane; t < hi; t += lanes) acc_merge<R>(a, (ACC)ld(x[t]), base + t);
    return;
  }
  i64 k = lo + lane;
  for (; k + 3 * lanes < hi; k += 4 * lanes) {
    T q[4];
    _Pragma("unroll") for (int u = 0; u < 4; ++u) q[u] = x[(k + u * lanes) * rs];
    _Pragma("unroll") for (int u = 0; u < 4; ++u) acc_merge<R>(a, (ACC)ld(q[u]), base + k + u * lanes);
  }
  for (; k < hi; k += lanes) acc_merge<R>(a, (ACC)ld(x[k * rs]), base + k);
}

// Work item w = (output, chunk) of the rows walk: its elements, folded by `lanes` threads.
template <int R, int PF = 0> __device__ __forceinline__ Acc fold_item(const RLay& L, u64 px, i64 w, i64 chunks, i64 chunk, int lane, int lanes, int vec, i64& oo) {
  i64 o = w / chunks, c = w % chunks, ox;
  kept_offsets(L, o, ox, oo);
  const i64 ni = L.rshape[L.nr - 1], rs = L.rx[L.nr - 1];
  i64 nq = 1;
  for (int d = 0; d < L.nr - 1; ++d) nq *= L.rshape[d];
  Acc a = acc_init<R>();
  const T* x = (const T*)px + ox;
  if (chunks > 1) {  // one run (nr == 1), split
    i64 lo = c * chunk, hi = lo + chunk < ni ? lo + chunk : ni;
    fold_run<R, PF>(a, x, rs, lo, hi, 0, lane, lanes, vec);
  } else {
    for (i64 q = 0; q < nq; ++q) fold_run<R, PF>(a, x + run_offset(L, q), rs, 0, ni, q * ni, lane, lanes, vec);
  }
  return a;
}

template <int R> __device__ __forceinline__ void finish(u64 po, u64 ppart, i64 w, i64 chunks, i64 oo, Acc a, i64 count) {
  if (chunks == 1) { store_result<R>(po, oo, a, count); return; }
  PAcc p; p.v = (double)a.v; p.i = a.i;
  ((PAcc*)ppart)[w] = p;
}

// A partial written by another block of this kernel: read from L2 (`cg`), where this SM's L1
// could hold nothing older, but the load must not be served from it either way.
__device__ __forceinline__ PAcc load_part(const PAcc* p, bool cg) {
  if (!cg) return *p;
  PAcc r;
  asm volatile("ld.global.cg.f64 %0, [%1];" : "=d"(r.v) : "l"(&p->v) : "memory");
  asm volatile("ld.global.cg.s64 %0, [%1];" : "=l"(r.i) : "l"(&p->i) : "memory");
  return r;
}

// Merges the partial (v2, i2) into (v, i) in double: sums add; maximum and minimum keep NaN;
// argmax takes NaN as the largest value and the smaller index among equals.
template <int R> __device__ __forceinline__ void merge_part(double& v, i64& i, double v2, i64 i2) {
  if (R <= 1) { v += v2; return; }
  const bool an = v != v, bn = v2 != v2;
  const bool better = R == 2 ? (bn || v2 > v) : R == 3 ? (bn || v2 < v)
      : (bn && !an) || (!an && !bn && v2 > v) || ((bn == an) && (v2 == v || bn) && i2 < i);
  if (better && !(R <= 3 && an)) { v = v2; i = i2; }
}

// Output o from its chunks' partials, (o, c) at o * so + c * sc: one warp (every lane calls it;
// `live` false for a lane of a warp past the last output), lane 0 storing the result.
template <int R> __device__ __forceinline__ void combine_one(u64 ppart, u64 po, const RLay& L, i64 o, bool live, i64 chunks, i64 so, i64 sc, i64 count, bool cg) {
  const int lane = threadIdx.x & 31;
  // Sums merge in double here: the partials are few, and long reductions keep their digits.
  const double inf = __longlong_as_double(0x7ff0000000000000LL);
  double v = (R == 2 || R == 4) ? -inf : (R == 3 ? inf : 0.0);
  i64 i = 0x7fffffffffffffffLL;
  if (live) {
    for (i64 c = lane; c < chunks; c += 32) {
      const PAcc p = load_part((const PAcc*)ppart + o * so + c * sc, cg);
      merge_part<R>(v, i, p.v, p.i);
    }
  }
  for (int s = 16; s > 0; s >>= 1)
    merge_part<R>(v, i, __shfl_xor_sync(0xffffffffu, v, s), __shfl_xor_sync(0xffffffffu, i, s));
  if (live && lane == 0) {
    i64 ox, oo; kept_offsets(L, o, ox, oo);
    if (R == 4) ((i64*)po)[oo] = i;
    else ((T*)po)[oo] = st((C)(R == 1 ? v / (double)count : v));
  }
}

// Rows walk, G lanes (a power of two up to 32) per work item.
template <int R, int G> __device__ __forceinline__ void reduce_rows_g(u64 px, u64 po, u64 ppart, const RLay& L, i64 items, i64 chunks, i64 chunk, i64 count, int vec) {
  const int lane = threadIdx.x & (G - 1);
  const i64 groups = (i64)gridDim.x * (blockDim.x / G);
  for (i64 w = (i64)blockIdx.x * (blockDim.x / G) + threadIdx.x / G; w - (threadIdx.x / G) < items; w += groups) {
    i64 oo = 0;
    Acc a = acc_init<R>();
    if (w < items) a = fold_item<R>(L, px, w, chunks, chunk, lane, G, vec, oo);
    acc_shfl<R>(a, G);
    if (w < items && lane == 0) finish<R>(po, ppart, w, chunks, oo, a, count);
  }
}

// Rows walk, a block per work item: `NAME_rows_block` 4 packs a thread a step,
// `NAME_rows_block8` (where a config sets `rows_packs` 8) 4 a step with the next step's 4 in
// flight. `flags`: 1, the run may be read in
// packs; 2 (chunked runs),
// the last block to finish a chunk of an output combines the output's chunks itself (one kernel,
// where otherwise a second one does): each block counts its finished chunk in the output's
// counter (a u32 before the partials: output o's at ppart - 4 (o + 1), zero when the kernel
// starts) once its partial is visible to every block (the fence), and the block that counts the
// last chunk reads the partials from L2, then sets the counter back to zero (memory the host
// keeps for the next call then needs no zeroing).
template <int R, int PF = 0> __device__ __forceinline__ void reduce_rows_b(u64 px, u64 po, u64 ppart, const RLay& L, i64 items, i64 chunks, i64 chunk, i64 count, int flags) {
  __shared__ int last;
  for (i64 w = blockIdx.x; w < items; w += gridDim.x) {
    i64 oo = 0;
    Acc a = fold_item<R, PF>(L, px, w, chunks, chunk, threadIdx.x, blockDim.x, flags & 1, oo);
    a = acc_block<R>(a);
    if (threadIdx.x == 0) finish<R>(po, ppart, w, chunks, oo, a, count);
    if (chunks > 1 && (flags & 2)) {
      const i64 o = w / chunks;
      u32* counter = (u32*)ppart - 1 - o;
      if (threadIdx.x == 0) {
        // The partial visible to every block (membar.gl), then counted (one atomic add).
        u32 seen;
        asm volatile("membar.gl;\n\tatom.global.add.u32 %0, [%1], 1;" : "=r"(seen) : "l"(counter) : "memory");
        last = seen == (u32)(chunks - 1);
      }
      __syncthreads();
      if (last && threadIdx.x < 32) combine_one<R>(ppart, po, L, o, true, chunks, chunks, 1, count, true);
      // Every other block of the output has counted: nothing reads the counter after this.
      if (last && threadIdx.x == 0) *counter = 0;
    }
    __syncthreads();
  }
}

// Columns walk: a thread per output; blockIdx.y is the chunk of the reduced elements (one run
// when chunked). Partials are laid out [chunk][output].
template <int R> __device__ __forceinline__ void reduce_cols(u64 px, u64 po, u64 ppart, const RLay& L, i64 nout, i64 chunks, i64 chunk, i64 count) {
  const i64 ni = L.rshape[L.nr - 1], rs = L.rx[L.nr - 1];
  i64 nq = 1;
  for (int d = 0; d < L.nr - 1; ++d) nq *= L.rshape[d];
  const i64 c = blockIdx.y;
  for (i64 o = (i64)blockIdx.x * blockDim.x + threadIdx.x; o < nout; o += (i64)gridDim.x * blockDim.x) {
    i64 ox, oo; kept_offsets(L, o, ox, oo);
    const T* x = (const T*)px + ox;
    Acc a = acc_init<R>();
    if (chunks > 1) {
      i64 lo = c * chunk, hi = lo + chunk < ni ? lo + chunk : ni;
      fold_run<R>(a, x, rs, lo, hi, 0, 0, 1, 0);
    } else {
      for (i64 q = 0; q < nq; ++q) fold_run<R>(a, x + run_offset(L, q), rs, 0, ni, q * ni, 0, 1, 0);
    }
    if (chunks == 1) store_result<R>(po, oo, a, count);
    else { PAcc p; p.v = (double)a.v; p.i = a.i; ((PAcc*)ppart)[c * nout + o] = p; }
  }
}

// Columns walk over packs: a thread per VEC neighbouring outputs (the innermost kept dim is
// contiguous in x, a multiple of VEC long, and every other stride a multiple of VEC, so each
// 16-byte load is aligned), eight rows of packs in flight (four left the SMs short of bytes in
// flight: 0.74 of the copy limit on 65536 x 4096 bf16).
template <int R> __device__ __forceinline__ void reduce_cols_vec(u64 px, u64 po, u64 ppart, const RLay& L, i64 nout, i64 chunks, i64 chunk, i64 count) {
  const i64 ni = L.rshape[L.nr - 1], rs = L.rx[L.nr - 1], ko = L.ko[L.nk - 1];
  i64 nq = 1;
  for (int d = 0; d < L.nr - 1; ++d) nq *= L.rshape[d];
  const i64 c = blockIdx.y, npk = nout / VEC;
  for (i64 p = (i64)blockIdx.x * blockDim.x + threadIdx.x; p < npk; p += (i64)gridDim.x * blockDim.x) {
    i64 ox, oo; kept_offsets(L, p * VEC, ox, oo);
    Acc a[VEC];
    _Pragma("unroll") for (int j = 0; j < VEC; ++j) a[j] = acc_init<R>();
    i64 q0 = 0, q1 = nq, lo = 0, hi = ni;
    if (chunks > 1) { q1 = 1; lo = c * chunk; hi = lo + chunk < ni ? lo + chunk : ni; }
    for (i64 q = q0; q < q1; ++q) {
      const T* x = (const T*)px + ox + run_offset(L, q);
      i64 k = lo;
      for (; k + 7 < hi; k += 8) {
        Pack v[8];
        _Pragma("unroll") for (int u = 0; u < 8; ++u) v[u] = *(const Pack*)(x + (k + u) * rs);
        _Pragma("unroll") for (int u = 0; u < 8; ++u)
          _Pragma("unroll") for (int j = 0; j < VEC; ++j) acc_merge<R>(a[j], (ACC)ld(v[u].v[j]), q * ni + k + u);
      }
      for (; k < hi; ++k) {
        Pack v = *(const Pack*)(x + k * rs);
        _Pragma("unroll") for (int j = 0; j < VEC; ++j) acc_merge<R>(a[j], (ACC)ld(v.v[j]), q * ni + k);
      }
    }
    _Pragma("unroll") for (int j = 0; j < VEC; ++j) {
      if (chunks == 1) store_result<R>(po, oo + j * ko, a[j], count);
      else { PAcc pa; pa.v = (double)a[j].v; pa.i = a[j].i; ((PAcc*)ppart)[c * nout + p * VEC + j] = pa; }
    }
  }
}

// Columns walk over packs in blocks of 32 x 8 threads: 32 neighbouring packs of outputs (x, a
// warp reads 32 neighbouring packs of a row) by 8 interleaved slices of the chunk's reduced
// elements (y), eight rows of packs in flight a thread; the slices merge through shared memory,
// so a chunk leaves one partial per output for 8 threads' rows and the grid can hold enough
// threads to fill the SMs without a large partial array. Same layout conditions as cols_vec.
template <int R> __device__ __forceinline__ void reduce_cols_tile(u64 px, u64 po, u64 ppart, const RLay& L, i64 nout, i64 chunks, i64 chunk, i64 count) {
  __shared__ ACC shv[8][32];
  __shared__ i64 shi[8][32];
  const i64 ni = L.rshape[L.nr - 1], rs = L.rx[L.nr - 1], ko = L.ko[L.nk - 1];
  i64 nq = 1;
  for (int d = 0; d < L.nr - 1; ++d) nq *= L.rshape[d];
  const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
  const i64 c = blockIdx.y, npk = nout / VEC, p = (i64)blockIdx.x * 32 + tx;
  const bool live = p < npk;
  i64 ox = 0, oo = 0;
  if (live) kept_offsets(L, p * VEC, ox, oo);
  Acc a[VEC];
  _Pragma("unroll") for (int j = 0; j < VEC; ++j) a[j] = acc_init<R>();
  i64 q1 = nq, lo = 0, hi = ni;
  if (chunks > 1) { q1 = 1; lo = c * chunk; hi = lo + chunk < ni ? lo + chunk : ni; }
  for (i64 q = 0; live && q < q1; ++q) {
    const T* x = (const T*)px + ox + run_offset(L, q);
    i64 k = lo + ty;
    for (; k + 7 * 8 < hi; k += 8 * 8) {
      Pack v[8];
      _Pragma("unroll") for (int u = 0; u < 8; ++u) v[u] = *(const Pack*)(x + (k + 8 * u) * rs);
      _Pragma("unroll") for (int u = 0; u < 8; ++u)
        _Pragma("unroll") for (int j = 0; j < VEC; ++j) acc_merge<R>(a[j], (ACC)ld(v[u].v[j]), q * ni + k + 8 * u);
    }
    for (; k < hi; k += 8) {
      Pack v = *(const Pack*)(x + k * rs);
      _Pragma("unroll") for (int j = 0; j < VEC; ++j) acc_merge<R>(a[j], (ACC)ld(v.v[j]), q * ni + k);
    }
  }
  _Pragma("unroll") for (int j = 0; j < VEC; ++j) {
    shv[ty][tx] = a[j].v; shi[ty][tx] = a[j].i;
    __syncthreads();
    if (ty == 0) {
      for (int y = 1; y < 8; ++y) acc_merge<R>(a[j], shv[y][tx], shi[y][tx]);
      if (live) {
        if (chunks == 1) store_result<R>(po, oo + j * ko, a[j], count);
        else { PAcc pa; pa.v = (double)a[j].v; pa.i = a[j].i; ((PAcc*)ppart)[c * nout + p * VEC + j] = pa; }
      }
    }
    __syncthreads();
  }
}

// Combines the chunks of each output: a warp per output; partial (o, c) at o * so + c * sc.
template <int R> __device__ __forceinline__ void reduce_combine(u64 ppart, u64 po, const RLay& L, i64 nout, i64 chunks, i64 so, i64 sc, i64 count) {
  const i64 warps = (i64)gridDim.x * (blockDim.x >> 5);
  for (i64 o = (i64)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); o - (threadIdx.x >> 5) < nout; o += warps)
    combine_one<R>(ppart, po, L, o, o < nout, chunks, so, sc, count, false);
}

#define REDUCE_OP(NAME, R) \
extern "C" __global__ void NAME##_rows_1(u64 px, u64 po, u64 pp, RLay L, i64 items, i64 chunks, i64 chunk, i64 count, int vec) { reduce_rows_g<R, 1>(px, po, pp, L, items, chunks, chunk, count, vec); } \
extern "C" __global__ void NAME##_rows_4(u64 px, u64 po, u64 pp, RLay L, i64 items, i64 chunks, i64 chunk, i64 count, int vec) { reduce_rows_g<R, 4>(px, po, pp, L, items, chunks, chunk, count, vec); } \
extern "C" __global__ void NAME##_rows_32(u64 px, u64 po, u64 pp, RLay L, i64 items, i64 chunks, i64 chunk, i64 count, int vec) { reduce_rows_g<R, 32>(px, po, pp, L, items, chunks, chunk, count, vec); } \
extern "C" __global__ void NAME##_rows_block(u64 px, u64 po, u64 pp, RLay L, i64 items, i64 chunks, i64 chunk, i64 count, int flags) { reduce_rows_b<R>(px, po, pp, L, items, chunks, chunk, count, flags); } \
extern "C" __global__ void NAME##_rows_block8(u64 px, u64 po, u64 pp, RLay L, i64 items, i64 chunks, i64 chunk, i64 count, int flags) { reduce_rows_b<R, 1>(px, po, pp, L, items, chunks, chunk, count, flags); } \
extern "C" __global__ void NAME##_cols(u64 px, u64 po, u64 pp, RLay L, i64 nout, i64 chunks, i64 chunk, i64 count) { reduce_cols<R>(px, po, pp, L, nout, chunks, chunk, count); } \
extern "C" __global__ void NAME##_cols_vec(u64 px, u64 po, u64 pp, RLay L, i64 nout, i64 chunks, i64 chunk, i64 count) { reduce_cols_vec<R>(px, po, pp, L, nout, chunks, chunk, count); } \
extern "C" __global__ void __launch_bounds__(256) NAME##_cols_tile(u64 px, u64 po, u64 pp, RLay L, i64 nout, i64 chunks, i64 chunk, i64 count) { reduce_cols_tile<R>(px, po, pp, L, nout, chunks, chunk, count); } \
extern "C" __global__ void NAME##_combine(u64 pp, u64 po, RLay L, i64 nout, i64 chunks, i64 so, i64 sc, i64 count) { reduce_combine<R>(pp, po, L, nout, chunks, so, sc, count); }

// One op a module (RED, set by the host), so a first call compiles only what it runs.
#if RED == 0
REDUCE_OP(sum, 0)
#elif RED == 1
REDUCE_OP(mean, 1)
#elif RED == 2
REDUCE_OP(max, 2)
#elif RED == 3
REDUCE_OP(min, 3)
#else
REDUCE_OP(argmax, 4)

// argmax of 16-bit float rows of at most 65536 elements, contiguous (one run, one chunk), a warp
// a row: each element becomes one unsigned key, (order << 16) | (65535 - index), and the row's
// argmax is the largest key: one maximum an element instead of a compare-and-select of a
// (value, index) pair, and one redux.sync for the warp. The order of the 16 bits: IEEE formats
// are sign-magnitude, so positives map above negatives by flipping; -0 ties +0; NaN is above
// everything (and the first NaN wins, as among equal values the first). U packs a lane in
// flight per step. Other dtypes never run it (the planner), and trap if they do.
__device__ __forceinline__ u32 umax32(u32 a, u32 b) { return a > b ? a : b; }
__device__ __forceinline__ u32 argmax_key(T v, i64 i) {
  u32 order;
  if constexpr (sizeof(T) == 2) {
    const u32 bits = (u32)v, mag = bits & 0x7fffu;
    order = ld(v) != ld(v) ? 0xffffu : ((bits & 0x8000u) && mag ? 0x7fffu - mag : 0x8000u | mag);
  } else {
    order = 0;
  }
  return (order << 16) | (u32)(0xffff - i);
}

// argmax_rows_run8 (`argmax_key` 2): the same rows by a running maximum a lane instead of a key
// an element. A step of U packs takes its maximum on words (vals_max: one max.NaN.bf16x2 for two
// elements, exact), and only a step whose maximum beats the lane's (the first step, a greater
// value, or the first NaN) searches its elements for the first equal to it (-0 equals +0; NaN
// for a NaN maximum). Within a lane indices grow, so a later equal maximum never replaces an
// earlier one; the lanes' (maximum, first index) become keys as above for one redux.sync. Random
// rows search a few steps of a row; ascending rows every step, at about the key kernel's cost.

// One step of N packs in registers, pack u holding elements at + u * 32 VEC ...: the lane's
// maximum m and its first index `first` (-1 before its first step).
template <int N> __device__ __forceinline__ void argmax_run_step(const Pack* q, i64 at, C& m, i64& first) {
  C sm = vals_max<VEC>(q[0].v);
  _Pragma("unroll") for (int u = 1; u < N; ++u) sm = max_nan(sm, vals_max<VEC>(q[u].v));
  if (first >= 0 && (sm != sm ? m != m : !(sm > m))) return;
  // Backwards, so that the last match kept is the first.
  _Pragma("unroll") for (int u = N - 1; u >= 0; --u) {
    _Pragma("unroll") for (int j = VEC - 1; j >= 0; --j) {
      const C v = ld(q[u].v[j]);
      if (v == sm || (v != v && sm != sm)) first = at + u * 32 * VEC + j;
    }
  }
  m = sm;
}

// A warp a row; RUN false: a key an element (argmax_rows_key8), true: the running maximum of
// the packs (argmax_rows_run8). Elements before the first 16-byte boundary and after the last
// whole pack are keys either way.
template <int U, bool RUN> __device__ __forceinline__ void argmax_rows(u64 px, u64 po, const RLay& L, i64 items, i64 count) {
  if (sizeof(T) != 2) { asm volatile("trap;"); return; }
  const int lane = threadIdx.x & 31;
  const i64 per = blockDim.x >> 5;
  for (i64 w = (i64)blockIdx.x * per + (threadIdx.x >> 5); w < items; w += (i64)gridDim.x * per) {
    i64 ox, oo; kept_offsets(L, w, ox, oo);
    const T* x = (const T*)px + ox;
    u32 best = 0;
    const i64 head = peel(x, 0, count), np = (count - head) / VEC;
    for (i64 k = lane; k < head; k += 32) best = umax32(best, argmax_key(x[k], k));
    const Pack* pp = (const Pack*)(x + head);
    C m = NEG_INF;
    i64 first = -1;
    i64 k = lane;
    for (; k + (U - 1) * 32 < np; k += U * 32) {
      Pack q[U];
      _Pragma("unroll") for (int u = 0; u < U; ++u) q[u] = pp[k + u * 32];
      if constexpr (RUN) {
        argmax_run_step<U>(q, head + k * VEC, m, first);
      } else {
        _Pragma("unroll") for (int u = 0; u < U; ++u) {
          const i64 i0 = head + (k + u * 32) * VEC;
          _Pragma("unroll") for (int j = 0; j < VEC; ++j) best = umax32(best, argmax_key(q[u].v[j], i0 + j));
        }
      }
    }
    for (; k < np; k += 32) {
      const Pack q = pp[k];
      if constexpr (RUN) {
        argmax_run_step<1>(&q, head + k * VEC, m, first);
      } else {
        _Pragma("unroll") for (int j = 0; j < VEC; ++j) best = umax32(best, argmax_key(q.v[j], head + k * VEC + j));
      }
    }
    for (i64 t = head + np * VEC + lane; t < count; t += 32) best = umax32(best, argmax_key(x[t], t));
    if (RUN && first >= 0) best = umax32(best, argmax_key(st(m), first));
#if __CUDA_ARCH__ >= 800
    best = __reduce_max_sync(0xffffffffu, best);
#else
    for (int o = 16; o > 0; o >>= 1) best = umax32(best, __shfl_xor_sync(0xffffffffu, best, o));
#endif
    if (lane == 0) ((i64*)po)[oo] = 0xffff - (i64)(best & 0xffffu);
  }
}

extern "C" __global__ void __launch_bounds__(256) argmax_rows_run8(u64 px, u64 po, u64 pp, RLay L, i64 items, i64 chunks, i64 chunk, i64 count, int vec) { argmax_rows<8, true>(px, po, L, items, count); }
extern "C" __global__ void __launch_bounds__(256) argmax_rows_key8(u64 px, u64 po, u64 pp, RLay L, i64 items, i64 chunks, i64 chunk, i64 count, int vec) { argmax_rows<8, false>(px, po, L, items, count); }
#endif
