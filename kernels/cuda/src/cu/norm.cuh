// layer_norm (OPK 0) and rms_norm (OPK 1) over the last axis, rows laid out by Lay (x in s0,
// out in s1), with optional weight and bias (pw, pb: 0 when absent; strides sw, sb). Statistics
// in C (float for 16-bit types): in registers, the mean and then the centred variance (two
// passes over the registers, a warp per row); the block variants sum values shifted by the row's
// first element, so one block reduction of a pair gives both.
// - norm_warp_N: a warp per row, N 16-byte packs a lane (contiguous aligned rows);
// - norm_block_PK: a block per row (up to 1024 threads), PK packs a thread (aligned rows of
//   whole packs, weight and bias as packs); norm_block_any_PK: the same for rows contiguous at
//   one alignment phase in x and out (any length) and any weight;
// - norm_rows: a block per row, any length and strides (the row read twice).


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
// and bias read element by element. Two instances, because the general one's registers (the
// element-wise weight addresses) would make the common one spill. Each element is read once.
template <int PK, int OPK, int ANY> __device__ __forceinline__ void norm_block(u64 px, u64 po, u64 pw, u64 pb, i64 rows, i64 len, const Lay& L, double eps, i64 sw, i64 sb, int wvec) {
  __shared__ C sh[64];
  const T* w = (const T*)pw; const T* b = (const T*)pb;
  for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
    i64 ox, oo; row_start(L, r, ox, oo);
    const T* xr = (const T*)px + ox;
    T* orow = (T*)po + oo;
    const i64 head = ANY ? peel(xr, 0, len) : 0, nv = (len - head) / VEC, tail0 = head + nv * VEC;
    const Pack* x = (const Pack*)(xr + head);
    Pack* o = (Pack*)(orow + head);
    const C shift = OPK == 0 ? ld(xr[0]) : (C)0;
    Pack v[PK];
    // The head element (threads below head) and the tail element (threads below len - tail0).
    const bool hd = ANY && threadIdx.x < head, tl = ANY && tail0 + threadIdx.x < len;
    C eh = hd ? ld(xr[threadIdx.x]) : (C)0, et = tl ? ld(xr[tail0 + threadIdx.x]) : (C)0;
    C s = 0, q2 = 0;
    _Pragma("unroll") for (int p = 0; p < PK; ++p) {
      i64 k = threadIdx.x + (i64)p * blockDim.x;
      if (k < nv) v[p] = x[k];
    }
    if (hd) { C d = eh - shift; s += d; q2 += d * d; }
    if (tl) { C d = et - shift; s += d; q2 += d * d; }
    _Pragma("unroll") for (int p = 0; p < PK; ++p) {
      bool ok = threadIdx.x + (i64)p * blockDim.x < nv;
      _Pragma("unroll") for (int j = 0; j < VEC; ++j) {
        C d = ok ? ld(v[p].v[j]) - shift : (C)0;
        s += d;
        q2 += d * d;
      }
    }
    block_sum2(s, q2, sh);
    // rms_norm: no shift, no mean: the mean square.
    C dm = OPK == 0 ? s / (C)len : (C)0, var = q2 / (C)len - dm * dm;
    C rstd = RSQRT((var > (C)0 ? var : (C)0) + (C)eps), mean = shift + dm;
    if (hd) orow[threadIdx.x] = st(norm_one(eh, mean, rstd, w, b, threadIdx.x, sw, sb));
    if (tl) orow[tail0 + threadIdx.x] = st(norm_one(et, mean, rstd, w, b, tail0 + threadIdx.x, sw, sb));
    const int packs = !ANY;
    _Pragma("unroll") for (int p = 0; p < PK; ++p) {
      i64 k = threadIdx.x + (i64)p * blockDim.x;
      if (k < nv) o[k] = norm_pack(v[p], mean, rstd, w, b, head, k, sw, sb, packs);
    }
  }
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
extern "C" __global__ void NAME##_rows(u64 px, u64 po, u64 pw, u64 pb, i64 rows, i64 len, i64 sx, i64 so, Lay L, double eps, i64 sw, i64 sb, int vec) { norm_rows<OPK>(px, po, pw, pb, rows, len, sx, so, L, eps, sw, sb, vec); }
NORM_VARIANTS(layer_norm, 0)
NORM_VARIANTS(rms_norm, 1)
