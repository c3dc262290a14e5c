// layer_norm (OPK 0) and rms_norm (OPK 1) over the last axis, rows laid out by Lay (x in s0,
// out in s1), with optional weight and bias (pw, pb: 0 when absent; strides sw, sb). Statistics
// in C (float for 16-bit types): in registers, the mean and then the centred variance (two
// passes over the registers, a warp per row); the block variants sum values shifted by the row's
// first element, so one block reduction of a pair gives both.
// - norm_warp_N: a warp per row, N 16-byte packs a lane (contiguous aligned rows);
// - norm_block_PK: a block per row (up to 1024 threads), PK packs a thread (aligned rows of
//   whole packs, weight and bias as packs); norm_block_any_PK: the same for rows contiguous at
//   one alignment phase in x and out (any length) and any weight; norm_block_shift_PK: those
//   rows with weight and bias contiguous at any alignment, read as shifted packs (a candidate);
// - norm_cluster_CN (sm_90): the block variant's row split over a cluster of CN blocks;
// - norm_tile: rows of up to 8 warps' packs, several a block, the next rows prefetched into shared
//   memory while these are computed (aligned rows of whole packs, weight and bias as packs);
//   norm_tile_l1_B the same with weight and bias read from L1 each pass, B blocks an SM;
// - norm_rows: a block per row, any length and strides (the row read twice);
// - NAME_pipe_CN (norm_pipe.cuh): long aligned rows back to back pipelined through registers.


// Element k of the output from x's value v.
__device__ __forceinline__ C norm_one(C v, C mean, C rstd, const T* w, const T* b, i64 k, i64 sw, i64 sb) {
  C z = (v - mean) * rstd;
  if (w) z *= ld(w[k * sw]);
  if (b) z += ld(b[k * sb]);
  return z;
}

// Pack k (elements at + k VEC ...) of the output from x's pack xq; weight and bias as packs
// when `wvec` (then at is 0). The rows stay in registers as x's own packs (half the registers of
// floats for 16-bit types), converted where used.
__device__ __forceinline__ Pack norm_pack(const Pack& xq, C mean, C rstd, const T* w, const T* b, i64 at, i64 k, i64 sw, i64 sb, int wvec) {
  Pack q;
  if (wvec) {
    Pack wq, bq;
    if (w) wq = ((const Pack*)w)[k];
    if (b) bq = ((const Pack*)b)[k];
    _Pragma("unroll") for (int j = 0; j < VEC; ++j) {
      C z = (ld(xq.v[j]) - mean) * rstd;
      if (w) z *= ld(wq.v[j]);
      if (b) z += ld(bq.v[j]);
      q.v[j] = st(z);
    }
  } else {
    _Pragma("unroll") for (int j = 0; j < VEC; ++j) q.v[j] = st(norm_one(ld(xq.v[j]), mean, rstd, w, b, at + k * VEC + j, sw, sb));
  }
  return q;
}

// Weight and bias packs held in registers across rows (the tiles): a thread's columns are the
// same in every row of a persistent grid, so its N packs of each (k = first + p step) are read
// once, not again after every row's reduction, where the read would stand between the
// statistics and the stores. Held as 32-bit words (a Pack of 16-bit elements is split into
// halves wherever its words are handled whole).
template <int N> struct Held { U4 w[N], b[N]; };

template <int N> __device__ __forceinline__ void hold_read(Held<N>& h, const T* w, const T* b, i64 first, i64 step, i64 end) {
  _Pragma("unroll") for (int p = 0; p < N; ++p) {
    const i64 k = first + p * step;
    if (k < end) {
      if (w) h.w[p] = ((const U4*)w)[k];
      if (b) h.b[p] = ((const U4*)b)[k];
    }
  }
}

// A pack of the output from x's pack and weight and bias words (either absent: hw, hb):
// (x - mean) rstd, then weight and bias. 16-bit rows cost instructions, not bytes: there the
// first step is one fused multiply-add, x rstd - mean rstd (whose rounding the 16-bit result
// hides; float32 keeps the subtraction, exact where the mean is large against the spread).
// Weight and bias are widened here: the empty asm on their words keeps the compiler from
// widening them earlier (before a reduction, or out of the row loop where they are held), where
// their floats (VEC a pack) would be live across it and spill.
__device__ __forceinline__ Pack norm_pack_held(const Pack& xq, C mean, C rstd, U4 wu, U4 bu, bool hw, bool hb) {
  asm volatile("" : "+r"(wu.x), "+r"(wu.y), "+r"(wu.z), "+r"(wu.w), "+r"(bu.x), "+r"(bu.y), "+r"(bu.z), "+r"(bu.w));
  C z[VEC], wv[VEC], bv[VEC];
  vals_ld<VEC>(xq.v, z);
  if (hw) vals_ld<VEC>((const T*)&wu, wv);
  if (hb) vals_ld<VEC>((const T*)&bu, bv);
#if HALF
  const C shift = -mean * rstd;
#endif
  _Pragma("unroll") for (int e = 0; e < VEC; ++e) {
#if HALF
    z[e] = z[e] * rstd + shift;
#else
    z[e] = (z[e] - mean) * rstd;
#endif
    if (hw) z[e] *= wv[e];
    if (hb) z[e] += bv[e];
  }
  return pack_st(z);
}

// Weight or bias (contiguous) as 16-byte packs at x's alignment phase (norm_block_shift_PK): the
// vector's elements head + k VEC ... lie m bytes past a 16-byte boundary for every k, so its
// pack k is bytes m .. m + 15 of the aligned packs k and k + 1, one funnel shift a word, where
// it was VEC loads of one element. Packs from `whole` on (the last, whose aligned successor may
// lie past the vector's end) are read element by element.
struct Shifted {
  const U4* a;  // aligned down from the vector's element `head`
  int m;        // bytes from a to that element
  i64 whole;    // packs k < whole have the aligned packs they take within the vector
};

__device__ __forceinline__ Shifted shifted_at(const T* v, i64 head, i64 len) {
  const char* p = (const char*)(v + head);
  Shifted s;
  s.m = (int)((u64)p & 15);
  s.a = (const U4*)(p - s.m);
  const i64 bytes = s.m + (len - head) * (i64)sizeof(T);  // of the vector from a
  s.whole = bytes / 16 - (s.m ? 1 : 0);
  return s;
}

// The low word of hi:lo shifted right by sh bits (0 <= sh < 32): one funnel shift.
__device__ __forceinline__ u32 shf_r(u32 lo, u32 hi, int sh) {
  u32 r;
  asm("shf.r.clamp.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(lo), "r"(hi), "r"(sh));
  return r;
}

// Words Q .. Q + 3 of w, each shifted right by sh bits into the next.
template <int Q> __device__ __forceinline__ Pack funnel(const u32 (&w)[8], int sh) {
  U4 q;
  q.x = shf_r(w[Q], w[Q + 1], sh);
  q.y = shf_r(w[Q + 1], w[Q + 2], sh);
  q.z = shf_r(w[Q + 2], w[Q + 3], sh);
  q.w = shf_r(w[Q + 3], w[Q + 4], sh);
  return *(const Pack*)&q;
}

// Pack k (k < s.whole) of the vector from its element `head` on.
__device__ __forceinline__ Pack shifted_pack(const Shifted& s, i64 k) {
  if (s.m == 0) return *(const Pack*)&s.a[k];
  const U4 lo = s.a[k], hi = s.a[k + 1];
  const u32 w[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
  const int sh = 8 * (s.m & 3);
  // The word offset is the same for a whole row: a uniform branch, constant indices.
  switch (s.m >> 2) {
    case 0: return funnel<0>(w, sh);
    case 1: return funnel<1>(w, sh);
    case 2: return funnel<2>(w, sh);
    default: return funnel<3>(w, sh);
  }
}

// Pack k of the output (elements head + k VEC ...) with weight and bias as shifted packs where
// they have them, else element by element.
__device__ __forceinline__ Pack norm_pack_shifted(const Pack& xq, C mean, C rstd, const T* w, const T* b, const Shifted& ws, const Shifted& bs, i64 head, i64 k) {
  Pack wq, bq;
  const bool wp = w && k < ws.whole, bp = b && k < bs.whole;
  if (wp) wq = shifted_pack(ws, k);
  if (bp) bq = shifted_pack(bs, k);
  Pack q;
  _Pragma("unroll") for (int j = 0; j < VEC; ++j) {
    const i64 e = head + k * VEC + j;
    C z = (ld(xq.v[j]) - mean) * rstd;
    if (w) z *= ld(wp ? wq.v[j] : w[e]);
    if (b) z += ld(bp ? bq.v[j] : b[e]);
    q.v[j] = st(z);
  }
  return q;
}

template <int N, int OPK> __device__ __forceinline__ void norm_warp(u64 px, u64 po, u64 pw, u64 pb, i64 rows, i64 len, const Lay& L, double eps, i64 sw, i64 sb, int wvec) {
  const int lane = threadIdx.x & 31;
  const i64 per = blockDim.x >> 5, first = threadIdx.x >> 5, nv = len / VEC;
  const T* w = (const T*)pw; const T* b = (const T*)pb;
  for (i64 r = (i64)blockIdx.x * per + first; r - first < rows; r += (i64)gridDim.x * per) {
    const bool live = r < rows;
    i64 ox = 0, oo = 0;
    if (live) row_start(L, r, ox, oo);
    const Pack* x = (const Pack*)((const T*)px + ox);
    Pack* o = (Pack*)((T*)po + oo);
    Pack v[N];
    C s = 0;
    _Pragma("unroll") for (int p = 0; p < N; ++p) {
      i64 k = lane + p * 32;
      if (live && k < nv) v[p] = x[k];
    }
    _Pragma("unroll") for (int p = 0; p < N; ++p) {
      bool ok = live && lane + p * 32 < nv;
      _Pragma("unroll") for (int j = 0; j < VEC; ++j) s += ok ? ld(v[p].v[j]) : (C)0;
    }
    C mean = 0;
    if (OPK == 0) mean = warp_sum(s) / (C)len;
    C q2 = 0;
    _Pragma("unroll") for (int p = 0; p < N; ++p) {
      bool ok = live && lane + p * 32 < nv;
      _Pragma("unroll") for (int j = 0; j < VEC; ++j) { C d = ok ? ld(v[p].v[j]) - mean : (C)0; q2 += d * d; }
    }
    C rstd = RSQRT(warp_sum(q2) / (C)len + (C)eps);
    _Pragma("unroll") for (int p = 0; p < N; ++p) {
      i64 k = lane + p * 32;
      if (live && k < nv) o[k] = norm_pack(v[p], mean, rstd, w, b, 0, k, sw, sb, wvec);
    }
  }
}

// A block per row in registers. One block reduction of the pair (sum, sum of squares) of the
// values less the row's first element (so the variance does not cancel when the mean is large
// against the spread). ANY 0: aligned rows of whole packs, weight and bias absent or packs
// (`wvec`). ANY 1: rows contiguous in x and out at the same distance from 16-byte alignment (any
// length, such as 4097) and any weight: the `head` elements before x's first boundary and the
// `tail` after its last whole pack are held one a thread, the packs between PK a thread, weight
// and bias read element by element. ANY 2: the same rows with weight and bias contiguous, read
// as packs shifted to x's alignment phase (`shifted_pack`). Separate instances, because the
// general ones' registers (the element-wise weight addresses) would make the common one spill.
// Each element is read once.
//
// CN > 1 (`norm_cluster_CN`, sm_90; ANY 0): a thread block cluster of CN blocks a row, each
// holding a CN-th of its packs, for rows that one block holds only with more than 512 threads
// (one block an SM, which cannot overlap one row's loads with another's arithmetic). Each block
// puts its pair of sums in shared memory (a slot by row parity, so a block may write the next
// row's while a slower one still reads this row's), and after one cluster barrier every block
// adds the CN pairs in rank order (the same statistics in every block).
template <int PK, int OPK, int ANY, int CN = 1> __device__ __forceinline__ void norm_block(u64 px, u64 po, u64 pw, u64 pb, i64 rows, i64 len, const Lay& L, double eps, i64 sw, i64 sb, int wvec) {
  static_assert(CN == 1 || !ANY, "clusters take aligned rows of whole packs");
  __shared__ C sh[64];
#if __CUDA_ARCH__ >= 900
  __shared__ C pair[2][2];
#endif
  const T* w = (const T*)pw; const T* b = (const T*)pb;
  const int c = CN > 1 ? (int)(blockIdx.x % CN) : 0;
  int parity = 0;
  for (i64 r = blockIdx.x / CN; r < rows; r += gridDim.x / CN, parity ^= 1) {
    i64 ox, oo; row_start(L, r, ox, oo);
    const T* xr = (const T*)px + ox;
    T* orow = (T*)po + oo;
    const i64 head = ANY ? peel(xr, 0, len) : 0, nv = (len - head) / VEC, tail0 = head + nv * VEC;
    // This block's packs [k0, k1): all of the row's, or a CN-th of them.
    const i64 cp = (nv + CN - 1) / CN, k0 = c * cp, k1 = k0 + cp < nv ? k0 + cp : nv;
    const Pack* x = (const Pack*)(xr + head);
    Pack* o = (Pack*)(orow + head);
    const C shift = OPK == 0 ? ld(xr[0]) : (C)0;
    Pack v[PK];
    // The head element (threads below head) and the tail element (threads below len - tail0).
    const bool hd = ANY && threadIdx.x < head, tl = ANY && tail0 + threadIdx.x < len;
    C eh = hd ? ld(xr[threadIdx.x]) : (C)0, et = tl ? ld(xr[tail0 + threadIdx.x]) : (C)0;
    C s = 0, q2 = 0;
    _Pragma("unroll") for (int p = 0; p < PK; ++p) {
      i64 k = k0 + threadIdx.x + (i64)p * blockDim.x;
      if (k < k1) v[p] = x[k];
    }
    if (hd) { C d = eh - shift; s += d; q2 += d * d; }
    if (tl) { C d = et - shift; s += d; q2 += d * d; }
    _Pragma("unroll") for (int p = 0; p < PK; ++p) {
      bool ok = k0 + threadIdx.x + (i64)p * blockDim.x < k1;
      _Pragma("unroll") for (int j = 0; j < VEC; ++j) {
        C d = ok ? ld(v[p].v[j]) - shift : (C)0;
        s += d;
        q2 += d * d;
      }
    }
    block_sum2(s, q2, sh);
#if __CUDA_ARCH__ >= 900
    if (CN > 1) {
      if (threadIdx.x == 0) { pair[parity][0] = s; pair[parity][1] = q2; }
      cluster_sync();
      s = 0; q2 = 0;
      _Pragma("unroll") for (int q = 0; q < CN; ++q) {
        s += ld_cluster(&pair[parity][0], q);
        q2 += ld_cluster(&pair[parity][1], q);
      }
    }
#endif
    // rms_norm: no shift, no mean: the mean square.
    C dm = OPK == 0 ? s / (C)len : (C)0, var = q2 / (C)len - dm * dm;
    C rstd = RSQRT((var > (C)0 ? var : (C)0) + (C)eps), mean = shift + dm;
    if (hd) orow[threadIdx.x] = st(norm_one(eh, mean, rstd, w, b, threadIdx.x, sw, sb));
    if (tl) orow[tail0 + threadIdx.x] = st(norm_one(et, mean, rstd, w, b, tail0 + threadIdx.x, sw, sb));
    if (ANY == 2) {
      // Weight and bias contiguous (the planner's condition): shifted packs.
      const Shifted ws = shifted_at(w, head, len), bs = shifted_at(b, head, len);
      _Pragma("unroll") for (int p = 0; p < PK; ++p) {
        i64 k = k0 + threadIdx.x + (i64)p * blockDim.x;
        if (k < k1) o[k] = norm_pack_shifted(v[p], mean, rstd, w, b, ws, bs, head, k);
      }
    } else {
      const int packs = !ANY;
      _Pragma("unroll") for (int p = 0; p < PK; ++p) {
        i64 k = k0 + threadIdx.x + (i64)p * blockDim.x;
        if (k < k1) o[k] = norm_pack(v[p], mean, rstd, w, b, head, k, sw, sb, packs);
      }
    }
  }
#if __CUDA_ARCH__ >= 900
  if (CN > 1) cluster_sync();  // no block leaves while another may read its pairs
#endif
}


// A block per row, any length: the row read twice; 16-byte packs after peeling to alignment when
// the row is contiguous in x and out at the same alignment (`vec`).
template <int OPK> __device__ __forceinline__ void norm_rows(u64 px, u64 po, u64 pw, u64 pb, i64 rows, i64 len, i64 sx, i64 so, const Lay& L, double eps, i64 sw, i64 sb, int vec) {
  __shared__ C sh[64];
  const T* w = (const T*)pw; const T* b = (const T*)pb;
  for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
    i64 ox, oo; row_start(L, r, ox, oo);
    const T* x = (const T*)px + ox; T* o = (T*)po + oo;
    const C shift = OPK == 0 ? ld(x[0]) : (C)0;
    C s = 0, q2 = 0;
    const i64 head = vec ? peel(x, 0, len) : len, np = vec ? (len - head) / VEC : 0, tail = head + np * VEC;
    for (i64 k = threadIdx.x; k < head; k += blockDim.x) { C d = ld(x[k * sx]) - shift; s += d; q2 += d * d; }
    const Pack* xp = (const Pack*)(x + head);
    for (i64 k = threadIdx.x; k < np; k += blockDim.x) {
      Pack q = xp[k];
      _Pragma("unroll") for (int j = 0; j < VEC; ++j) { C d = ld(q.v[j]) - shift; s += d; q2 += d * d; }
    }
    for (i64 k = tail + threadIdx.x; k < len; k += blockDim.x) { C d = ld(x[k]) - shift; s += d; q2 += d * d; }
    block_sum2(s, q2, sh);
    C dm = OPK == 0 ? s / (C)len : (C)0;
    C var = q2 / (C)len - dm * dm;
    C rstd = RSQRT((var > (C)0 ? var : (C)0) + (C)eps), mean = shift + dm;
    for (i64 k = threadIdx.x; k < head; k += blockDim.x) o[k * so] = st(norm_one(ld(x[k * sx]), mean, rstd, w, b, k, sw, sb));
    Pack* op = (Pack*)(o + head);
    for (i64 k = threadIdx.x; k < np; k += blockDim.x) {
      Pack q = xp[k], z;
      _Pragma("unroll") for (int j = 0; j < VEC; ++j) z.v[j] = st(norm_one(ld(q.v[j]), mean, rstd, w, b, head + k * VEC + j, sw, sb));
      op[k] = z;
    }
    for (i64 k = tail + threadIdx.x; k < len; k += blockDim.x) o[k] = st(norm_one(ld(x[k]), mean, rstd, w, b, k, sw, sb));
  }
}

// Rows of up to 8 warps' 4 packs a lane (bfloat16: 8192 elements) in blocks of 8 warps, `wr`
// warps a row and 8 / wr rows a pass, persistent over the passes. The next pass's packs are
// copied into shared memory (cp.async) while this pass's are reduced and written: two stages of
// 16 KiB, so each block keeps a pass of loads in flight through its own arithmetic and
// barriers. Each thread reads back only the packs it copied itself, so a stage needs no
// barrier; the cross-warp sums of a row take two when wr > 1. A thread's columns are the same in
// every row, so weight and bias (packs, or absent) are read into registers once per block.
// Aligned rows of whole packs; statistics exact in two passes over the registers.
// S stages: the next S - 1 passes in flight while one is computed (`norm_tile`: S = 2, static
// shared memory; `norm_tile3`, the `tile_stages` 3 candidate: S = 3 in 48 KiB of dynamic shared
// memory, twice the loads in flight where two blocks of 108-122 registers fill an SM).
// WL 1 (`norm_tile_l1_B`, the `tile_l1` candidate): weight and bias not held in registers but
// read each pass where they are used, from L1 (every block of an SM reads the same columns): B
// blocks an SM instead of two (3: 76-78 registers, 4: 64 with 24-56 bytes of spills for 16-bit
// types).
#define NT_PK 4
template <int OPK, int S, int WL = 0> __device__ __forceinline__ void norm_tile(u64 px, u64 po, u64 pw, u64 pb, i64 rows, i64 len, const Lay& L, double eps, int wr, Pack (*stage)[NT_PK * 256]) {
  // Cross-warp sums by pass parity: a warp writes the next pass's before a slower one of its row
  // has read this pass's (rms_norm has one barrier a pass).
  __shared__ C red[2][2][8];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int per = 8 / wr, g = warp / wr, wi = warp - g * wr;
  const i64 nv = len / VEC, passes = (rows + per - 1) / per;
  const i64 k0 = wi * 32 + lane, step = 32 * wr;
  const Pack* w = (const Pack*)pw; const Pack* b = (const Pack*)pb;
  Held<NT_PK> h;
  if (!WL) hold_read(h, (const T*)pw, (const T*)pb, k0, step, nv);
  // This thread's packs of pass t into stage s (slot j * 256 + thread: a warp's 16-byte
  // accesses are 512 contiguous bytes), then the group is closed (empty past the last pass).
  auto fetch = [&](i64 t, int s) {
    const i64 r = t * per + g;
    if (t < passes && r < rows) {
      i64 ox, oo; row_start(L, r, ox, oo);
      const Pack* x = (const Pack*)((const T*)px + ox);
      _Pragma("unroll") for (int j = 0; j < NT_PK; ++j) {
        const i64 k = k0 + j * step;
        if (k < nv) cp_async16(&stage[s][j * 256 + threadIdx.x], x + k);
      }
    }
    cp_async_commit();
  };
  _Pragma("unroll") for (int i = 0; i < S - 1; ++i) fetch(blockIdx.x + i * (i64)gridDim.x, i);
  int s = 0, par = 0;
  for (i64 t = blockIdx.x; t < passes; t += gridDim.x, s = s + 1 == S ? 0 : s + 1, par ^= 1) {
    // Into the stage the previous pass used (this thread's own slots, read back already).
    fetch(t + (S - 1) * (i64)gridDim.x, s == 0 ? S - 1 : s - 1);
    cp_async_wait<S - 1>();
    const i64 r = t * per + g;
    const bool live = r < rows;
    // The packs stay in shared memory, read again by each pass over them (the registers hold
    // weight and bias).
    const Pack* v = &stage[s][threadIdx.x];
    C sum = 0;
    _Pragma("unroll") for (int j = 0; j < NT_PK; ++j) {
      if (!live || k0 + j * step >= nv) continue;
      C xv[VEC];
      const Pack q = v[j * 256];  // one 16-byte shared load
      vals_ld<VEC>(q.v, xv);
      _Pragma("unroll") for (int e = 0; e < VEC; ++e) sum += xv[e];
    }
    C mean = 0;
    if (OPK == 0) {
      sum = warp_sum(sum);
      if (wr > 1) {
        if (lane == 0) red[par][0][warp] = sum;
        __syncthreads();
        sum = 0;
        for (int i = 0; i < wr; ++i) sum += red[par][0][g * wr + i];
      }
      mean = sum / (C)len;
    }
    C q2 = 0;
    _Pragma("unroll") for (int j = 0; j < NT_PK; ++j) {
      if (!live || k0 + j * step >= nv) continue;
      C xv[VEC];
      const Pack q = v[j * 256];  // one 16-byte shared load
      vals_ld<VEC>(q.v, xv);
      _Pragma("unroll") for (int e = 0; e < VEC; ++e) { C d = xv[e] - mean; q2 += d * d; }
    }
    q2 = warp_sum(q2);
    if (wr > 1) {
      if (lane == 0) red[par][1][warp] = q2;
      __syncthreads();
      q2 = 0;
      for (int i = 0; i < wr; ++i) q2 += red[par][1][g * wr + i];
    }
    const C rstd = RSQRT(q2 / (C)len + (C)eps);
    if (live) {
      i64 ox, oo; row_start(L, r, ox, oo);
      Pack* o = (Pack*)((T*)po + oo);
      _Pragma("unroll") for (int j = 0; j < NT_PK; ++j) {
        const i64 k = k0 + j * step;
        if (k >= nv) continue;
        U4 wp, bp;
        if (WL) {
          if (w) wp = ld_nc(w + k);
          if (b) bp = ld_nc(b + k);
        } else {
          wp = h.w[j];
          bp = h.b[j];
        }
        const Pack q = norm_pack_held(v[j * 256], mean, rstd, wp, bp, w, b);
        st_stream(o + k, *(const U4*)&q);
      }
    }
  }
  cp_async_wait<0>();
}

#define NORM_ARGS u64 px, u64 po, u64 pw, u64 pb, i64 rows, i64 len, Lay L, double eps, i64 sw, i64 sb, int wvec
#define NORM_PASS px, po, pw, pb, rows, len, L, eps, sw, sb, wvec
// Bounds: the warp variants launch 256 threads, the block variants up to 1024; they keep 64
// registers a thread (at least 1024 threads an SM), 128 for the largest warp variant.
#define NORM_VARIANTS(NAME, OPK) \
extern "C" __global__ void __launch_bounds__(256, 4) NAME##_warp_1(NORM_ARGS) { norm_warp<1, OPK>(NORM_PASS); } \
extern "C" __global__ void __launch_bounds__(256, 4) NAME##_warp_2(NORM_ARGS) { norm_warp<2, OPK>(NORM_PASS); } \
extern "C" __global__ void __launch_bounds__(256, 2) NAME##_warp_4(NORM_ARGS) { norm_warp<4, OPK>(NORM_PASS); } \
extern "C" __global__ void __launch_bounds__(1024) NAME##_block_1(NORM_ARGS) { norm_block<1, OPK, 0>(NORM_PASS); } \
extern "C" __global__ void __launch_bounds__(1024) NAME##_block_2(NORM_ARGS) { norm_block<2, OPK, 0>(NORM_PASS); } \
extern "C" __global__ void __launch_bounds__(1024) NAME##_block_4(NORM_ARGS) { norm_block<4, OPK, 0>(NORM_PASS); } \
extern "C" __global__ void __launch_bounds__(1024) NAME##_block_8(NORM_ARGS) { norm_block<8, OPK, 0>(NORM_PASS); } \
extern "C" __global__ void __launch_bounds__(1024) NAME##_block_any_1(NORM_ARGS) { norm_block<1, OPK, 1>(NORM_PASS); } \
extern "C" __global__ void __launch_bounds__(1024) NAME##_block_any_2(NORM_ARGS) { norm_block<2, OPK, 1>(NORM_PASS); } \
extern "C" __global__ void __launch_bounds__(1024) NAME##_block_any_4(NORM_ARGS) { norm_block<4, OPK, 1>(NORM_PASS); } \
extern "C" __global__ void __launch_bounds__(1024) NAME##_block_shift_1(NORM_ARGS) { norm_block<1, OPK, 2>(NORM_PASS); } \
extern "C" __global__ void __launch_bounds__(1024) NAME##_block_shift_2(NORM_ARGS) { norm_block<2, OPK, 2>(NORM_PASS); } \
extern "C" __global__ void __launch_bounds__(1024) NAME##_block_shift_4(NORM_ARGS) { norm_block<4, OPK, 2>(NORM_PASS); } \
extern "C" __global__ void __launch_bounds__(256, 2) NAME##_tile(u64 px, u64 po, u64 pw, u64 pb, i64 rows, i64 len, Lay L, double eps, int wr) { \
  __shared__ __align__(16) Pack stages[2][NT_PK * 256]; \
  norm_tile<OPK, 2>(px, po, pw, pb, rows, len, L, eps, wr, stages); } \
extern "C" __global__ void __launch_bounds__(256, 3) NAME##_tile_l1_3(u64 px, u64 po, u64 pw, u64 pb, i64 rows, i64 len, Lay L, double eps, int wr) { \
  __shared__ __align__(16) Pack stages[2][NT_PK * 256]; \
  norm_tile<OPK, 2, 1>(px, po, pw, pb, rows, len, L, eps, wr, stages); } \
extern "C" __global__ void __launch_bounds__(256, 4) NAME##_tile_l1_4(u64 px, u64 po, u64 pw, u64 pb, i64 rows, i64 len, Lay L, double eps, int wr) { \
  __shared__ __align__(16) Pack stages[2][NT_PK * 256]; \
  norm_tile<OPK, 2, 1>(px, po, pw, pb, rows, len, L, eps, wr, stages); } \
extern "C" __global__ void __launch_bounds__(256, 2) NAME##_tile3(u64 px, u64 po, u64 pw, u64 pb, i64 rows, i64 len, Lay L, double eps, int wr) { \
  extern __shared__ __align__(16) unsigned char norm_stages[]; \
  norm_tile<OPK, 3>(px, po, pw, pb, rows, len, L, eps, wr, (Pack (*)[NT_PK * 256])norm_stages); } \
extern "C" __global__ void NAME##_rows(u64 px, u64 po, u64 pw, u64 pb, i64 rows, i64 len, i64 sx, i64 so, Lay L, double eps, i64 sw, i64 sb, int vec) { norm_rows<OPK>(px, po, pw, pb, rows, len, sx, so, L, eps, sw, sb, vec); }
NORM_VARIANTS(layer_norm, 0)
NORM_VARIANTS(rms_norm, 1)
// Only where clusters exist: NVRTC rejects __cluster_dims__ before sm_90 (the planner chooses
// these only on such devices). 4 packs a thread (8 spill under the 64 registers that keep two
// blocks of 512 threads an SM), at most 512 threads a block.
#if __CUDA_ARCH__ >= 900
#define NORM_CLUSTERS(NAME, OPK) \
extern "C" __global__ void __launch_bounds__(1024) __cluster_dims__(2, 1, 1) NAME##_cluster_2(NORM_ARGS) { norm_block<4, OPK, 0, 2>(NORM_PASS); } \
extern "C" __global__ void __launch_bounds__(1024) __cluster_dims__(4, 1, 1) NAME##_cluster_4(NORM_ARGS) { norm_block<4, OPK, 0, 4>(NORM_PASS); } \
extern "C" __global__ void __launch_bounds__(1024) __cluster_dims__(8, 1, 1) NAME##_cluster_8(NORM_ARGS) { norm_block<4, OPK, 0, 8>(NORM_PASS); }
NORM_CLUSTERS(layer_norm, 0)
NORM_CLUSTERS(rms_norm, 1)
#endif
