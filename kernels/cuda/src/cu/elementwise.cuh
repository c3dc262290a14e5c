// Elementwise ops. Contiguous, 16-byte aligned operands: 16-byte packs, four in flight per
// thread, over a grid sized from the SM count (the host's launch), then a scalar tail. Other
// layouts (strided, transposed, broadcast with stride 0): one element per step, offsets from
// the collapsed shape by 32-bit multiply-high division where the tensor allows it.

// Each step a block reads P blockDim contiguous packs (thread t: packs t, t + blockDim, ...):
// neighbouring blocks read neighbouring memory, and each thread has P loads in flight (binary
// forms: 4 of each operand; unary: `unary_packs` of the tuning, 4 or 8 so that a unary op can
// keep as many bytes in flight as a binary one, or 1: a pack a thread over as many blocks as
// packs / blockDim, the Hopper choice for ops bound by memory).
#define TILE_LOOP(k, u, nv, P) \
  const u64 tile = (P) * (u64)blockDim.x, step = tile * gridDim.x; \
  u64 k = (u64)blockIdx.x * tile + threadIdx.x; \
  for (; k + ((P) - 1) * blockDim.x < (nv); k += step)
#define TILE_REST(k, nv) for (; k < (nv); k += blockDim.x)

template <int P, class F> __device__ __forceinline__ void unary_vec(u64 pa, u64 po, u64 n, F f) {
  const Pack* a = (const Pack*)pa; Pack* o = (Pack*)po;
  const u64 nv = n / VEC;
  TILE_LOOP(k, u, nv, P) {
    Pack x[P];
    _Pragma("unroll") for (int u = 0; u < P; ++u) x[u] = a[k + u * blockDim.x];
    _Pragma("unroll") for (int u = 0; u < P; ++u) {
      C v[VEC];
      pack_ld(x[u], v);
      _Pragma("unroll") for (int j = 0; j < VEC; ++j) v[j] = f(v[j]);
      o[k + u * blockDim.x] = pack_st(v);
    }
  }
  // The last, partial tile: its block finishes it pack by pack.
  if (k < nv && k - threadIdx.x + tile > nv) {
    TILE_REST(k, nv) {
      Pack x = a[k], z;
      _Pragma("unroll") for (int j = 0; j < VEC; ++j) z.v[j] = st(f(ld(x.v[j])));
      o[k] = z;
    }
  }
  const T* as = (const T*)pa; T* os = (T*)po;
  GRID_LOOP(t, n - nv * VEC) { u64 i = nv * VEC + t; os[i] = st(f(ld(as[i]))); }
}

template <class F> __device__ __forceinline__ void binary_vec(u64 pa, u64 pb, u64 po, u64 n, F f) {
  const Pack* a = (const Pack*)pa; const Pack* b = (const Pack*)pb; Pack* o = (Pack*)po;
  const u64 nv = n / VEC;
  TILE_LOOP(k, u, nv, 4) {
    Pack x[4], y[4];
    _Pragma("unroll") for (int u = 0; u < 4; ++u) { x[u] = a[k + u * blockDim.x]; y[u] = b[k + u * blockDim.x]; }
    _Pragma("unroll") for (int u = 0; u < 4; ++u) {
      C v[VEC], w[VEC];
      pack_ld(x[u], v);
      pack_ld(y[u], w);
      _Pragma("unroll") for (int j = 0; j < VEC; ++j) v[j] = f(v[j], w[j]);
      o[k + u * blockDim.x] = pack_st(v);
    }
  }
  if (k < nv && k - threadIdx.x + tile > nv) {
    TILE_REST(k, nv) {
      Pack x = a[k], y = b[k], z;
      _Pragma("unroll") for (int j = 0; j < VEC; ++j) z.v[j] = st(f(ld(x.v[j]), ld(y.v[j])));
      o[k] = z;
    }
  }
  const T* as = (const T*)pa; const T* bs = (const T*)pb; T* os = (T*)po;
  GRID_LOOP(t, n - nv * VEC) { u64 i = nv * VEC + t; os[i] = st(f(ld(as[i]), ld(bs[i]))); }
}

// Broadcasting over rows of C = cv packs (the output compact and aligned, C a multiple of VEC):
// each operand is full (mode 0: pack k), a row repeated (1: pack c of its row), a column repeated
// (2: element r * s splat over the pack) or one value (3). The pack's row comes from a 32-bit
// multiply-high division (`fast`: fewer than 2^31 packs) or a 64-bit one.
struct Bc { u64 rows, cv; u32 mul, shr; int fast; int ma, mb; i64 sa, sb; };

__device__ __forceinline__ Pack bc_load(u64 p, int mode, u64 k, u64 r, u64 c, i64 s) {
  if (mode == 0) return ((const Pack*)p)[k];
  if (mode == 1) return ((const Pack*)p)[c];
  Pack q;
  T v = mode == 2 ? ((const T*)p)[(i64)r * s] : ((const T*)p)[0];
  _Pragma("unroll") for (int j = 0; j < VEC; ++j) q.v[j] = v;
  return q;
}

template <class F> __device__ __forceinline__ void binary_bcast(u64 pa, u64 pb, u64 po, const Bc& B, F f) {
  Pack* o = (Pack*)po;
  const u64 nv = B.rows * B.cv;
  TILE_LOOP(k, u, nv, 4) {
    Pack x[4], y[4];
    _Pragma("unroll") for (int u = 0; u < 4; ++u) {
      u64 kk = k + u * blockDim.x;
      u64 r = B.fast ? (u64)((__umulhi((u32)kk, B.mul) + (u32)kk) >> B.shr) : kk / B.cv;
      u64 c = kk - r * B.cv;
      x[u] = bc_load(pa, B.ma, kk, r, c, B.sa);
      y[u] = bc_load(pb, B.mb, kk, r, c, B.sb);
    }
    _Pragma("unroll") for (int u = 0; u < 4; ++u) {
      C v[VEC], w[VEC];
      pack_ld(x[u], v);
      pack_ld(y[u], w);
      _Pragma("unroll") for (int j = 0; j < VEC; ++j) v[j] = f(v[j], w[j]);
      o[k + u * blockDim.x] = pack_st(v);
    }
  }
  if (k < nv && k - threadIdx.x + tile > nv) {
    TILE_REST(k, nv) {
      u64 r = k / B.cv, c = k - r * B.cv;
      Pack x = bc_load(pa, B.ma, k, r, c, B.sa), y = bc_load(pb, B.mb, k, r, c, B.sb), z;
      _Pragma("unroll") for (int j = 0; j < VEC; ++j) z.v[j] = st(f(ld(x.v[j]), ld(y.v[j])));
      o[k] = z;
    }
  }
}

// Rows of outputs whose inputs read every element or every second one of their rows
// (x[..., ::2] and x[..., 1::2], a rotary embedding's even and odd halves; rows of a sliced
// tensor), the output compact: a unit of work is H = VEC / 2 outputs, one 8-byte store. An
// input read every second element loads the aligned 16-byte pack that holds its 2H elements and
// keeps every second one from its phase (mode 1: from the pack's first element, 2: from its
// second; the pointer is the view's first element, one element past the pack's start in mode
// 2), one read every element (mode 0) loads 8 bytes; the same sectors as the element-by-element
// kernels, in a quarter or less of the loads. The unit's row from a 32-bit multiply-high division
// (`fast`: fewer than 2^31 units) or a 64-bit one.
struct __align__(8) Half { T v[VEC / 2]; };
struct Hv { u64 units, cu; u32 mul, shr; int fast; int ma, mb; i64 ra, rb; };

__device__ __forceinline__ void half_load(u64 p, int mode, i64 rs, u64 r, u64 c, C v[VEC / 2]) {
  if (mode == 0) {
    const Half h = *(const Half*)((const T*)p + (i64)r * rs + (i64)c * (VEC / 2));
    _Pragma("unroll") for (int j = 0; j < VEC / 2; ++j) v[j] = ld(h.v[j]);
  } else {
    // The whole pack (ld_v4), and two loops, not a select of elements, which compilers turn
    // into a select of addresses within the pack (a copy of it in local memory).
    Pack q;
    *(U4*)&q = ld_v4((const T*)p - (mode - 1) + (i64)r * rs + (i64)c * VEC);
    if (mode == 1) { _Pragma("unroll") for (int j = 0; j < VEC / 2; ++j) v[j] = ld(q.v[2 * j]); }
    else { _Pragma("unroll") for (int j = 0; j < VEC / 2; ++j) v[j] = ld(q.v[2 * j + 1]); }
  }
}

__device__ __forceinline__ u64 half_row(const Hv& V, u64 k) {
  return V.fast ? (u64)((__umulhi((u32)k, V.mul) + (u32)k) >> V.shr) : k / V.cu;
}

// Units k, k + blockDim, ... of a tile (TILE_LOOP), P = 4 a thread, every load issued before
// any store; the last, partial tile unit by unit.
template <int NI, class F> __device__ __forceinline__ void halves(u64 pa, u64 pb, u64 po, const Hv& V, F f) {
  Half* o = (Half*)po;
  TILE_LOOP(k, u, V.units, 4) {
    C x[4][VEC / 2], y[4][VEC / 2] = {};
    _Pragma("unroll") for (int u = 0; u < 4; ++u) {
      const u64 kk = k + u * blockDim.x, r = half_row(V, kk), c = kk - r * V.cu;
      half_load(pa, V.ma, V.ra, r, c, x[u]);
      if (NI == 2) half_load(pb, V.mb, V.rb, r, c, y[u]);
    }
    _Pragma("unroll") for (int u = 0; u < 4; ++u) {
      Half z;
      _Pragma("unroll") for (int j = 0; j < VEC / 2; ++j) z.v[j] = st(f(x[u][j], y[u][j]));
      o[k + u * blockDim.x] = z;
    }
  }
  if (k < V.units && k - threadIdx.x + tile > V.units) {
    TILE_REST(k, V.units) {
      const u64 r = half_row(V, k), c = k - r * V.cu;
      C x[VEC / 2], y[VEC / 2] = {};
      half_load(pa, V.ma, V.ra, r, c, x);
      if (NI == 2) half_load(pb, V.mb, V.rb, r, c, y);
      Half z;
      _Pragma("unroll") for (int j = 0; j < VEC / 2; ++j) z.v[j] = st(f(x[j], y[j]));
      o[k] = z;
    }
  }
}

// Operand k's offset is in s<k>; the output's is the last used lane.
template <class F> __device__ __forceinline__ void unary_strided(u64 pa, u64 po, u64 n, const Lay& L, F f) {
  const T* a = (const T*)pa; T* o = (T*)po;
  GRID_LOOP(i, n) { i64 x, y, z; offsets(L, (i64)i, x, y, z); o[y] = st(f(ld(a[x]))); }
}

// The 32-bit strided kernels with L.rounds 4 take four elements a thread a round, i + u gap,
// loading all four before storing any: the compiler may not move a load above a store that can
// alias it, so one element a round keeps one load per operand in flight a thread. The four are
// a grid's width apart (gap = step / 4, the grid walking all elements in rounds), or with
// L.tiled a block's width apart inside a tile of 4 blockDim consecutive elements (the grid
// walking tiles), so that a block's loads stay in one stretch of the tensor, not four.
// strided32_start sets the first element, the step between rounds and the gap; after the
// rounds, the last, partial one goes element by element a gap apart (thread by thread over the
// grid; with tiles, over the one block whose tile is partial).
__device__ __forceinline__ void strided32_start(const Lay32& L, u32& i, u32& step, u32& gap) {
  if (L.rounds == 4 && L.tiled) {
    gap = blockDim.x; step = 4 * blockDim.x * gridDim.x; i = 4 * blockDim.x * blockIdx.x + threadIdx.x;
  } else {
    gap = gridDim.x * blockDim.x; step = L.rounds == 4 ? 4 * gap : gap; i = blockIdx.x * blockDim.x + threadIdx.x;
  }
}
template <class F> __device__ __forceinline__ void unary_strided32(u64 pa, u64 po, u32 n, const Lay32& L, F f) {
  const T* a = (const T*)pa; T* o = (T*)po;
  u32 i, step, gap;
  strided32_start(L, i, step, gap);
  if (L.rounds == 4) {
    for (; (u64)i + 3 * (u64)gap < n; i += step) {
      int x[4], y[4], z; C v[4];
      _Pragma("unroll") for (int u = 0; u < 4; ++u) offsets32(L, i + u * gap, x[u], y[u], z);
      _Pragma("unroll") for (int u = 0; u < 4; ++u) v[u] = ld(a[x[u]]);
      _Pragma("unroll") for (int u = 0; u < 4; ++u) o[y[u]] = st(f(v[u]));
    }
  }
  for (; i < n; i += gap) {
    int x, y, z; offsets32(L, i, x, y, z); o[y] = st(f(ld(a[x])));
  }
}

template <class F> __device__ __forceinline__ void binary_strided(u64 pa, u64 pb, u64 po, u64 n, const Lay& L, F f) {
  const T* a = (const T*)pa; const T* b = (const T*)pb; T* o = (T*)po;
  GRID_LOOP(i, n) { i64 x, y, z; offsets(L, (i64)i, x, y, z); o[z] = st(f(ld(a[x]), ld(b[y]))); }
}

template <class F> __device__ __forceinline__ void binary_strided32(u64 pa, u64 pb, u64 po, u32 n, const Lay32& L, F f) {
  const T* a = (const T*)pa; const T* b = (const T*)pb; T* o = (T*)po;
  u32 i, step, gap;
  strided32_start(L, i, step, gap);
  if (L.rounds == 4) {
    for (; (u64)i + 3 * (u64)gap < n; i += step) {
      int x[4], y[4], z[4]; C v[4], w[4];
      _Pragma("unroll") for (int u = 0; u < 4; ++u) offsets32(L, i + u * gap, x[u], y[u], z[u]);
      _Pragma("unroll") for (int u = 0; u < 4; ++u) { v[u] = ld(a[x[u]]); w[u] = ld(b[y[u]]); }
      _Pragma("unroll") for (int u = 0; u < 4; ++u) o[z[u]] = st(f(v[u], w[u]));
    }
  }
  for (; i < n; i += gap) {
    int x, y, z; offsets32(L, i, x, y, z); o[z] = st(f(ld(a[x]), ld(b[y])));
  }
}

// Two dims [R, C] in the output's order, the output's columns contiguous, some input read with
// its rows contiguous instead (a transposed operand). Tiles of 32 x 32 elements, 256 threads
// (32 x 8, four rows a thread): an operand marked `via` is read a column of the tile at a time
// (its rows fastest, so a warp reads 32 neighbours) into shared memory and read back by rows;
// the others, and the output, go straight by rows. Both sides coalesced, where reading a
// transposed operand in the output's order touches a sector for every element.
struct Tl { i64 R, C; i64 sr[3], sc[3]; int via[2]; };

// This thread's four elements of the tile from p, as stored: an operand read `via` shared memory
// a column of the tile at a time (its rows fastest), the others by rows; 0 outside the tensor.
// Every operand's loads are issued before the tile's barrier (between tile_put and tile_get),
// so a thread keeps them all in flight at once.
__device__ __forceinline__ void tile_fetch(const T* p, i64 sr, i64 sc, int via, const Tl& L, i64 r0, i64 c0, T raw[4]) {
  const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
  _Pragma("unroll") for (int i = 0; i < 4; ++i) {
    const i64 r = via ? r0 + tx : r0 + ty + 8 * i, c = via ? c0 + ty + 8 * i : c0 + tx;
    raw[i] = (r < L.R && c < L.C) ? p[r * sr + c * sc] : (T)0;
  }
}

// A fetched operand read `via` shared memory: into it (tile_put), and after the block's barrier
// out of it by rows (tile_get); the others as fetched.
__device__ __forceinline__ void tile_put(int via, T (*sh)[33], const T raw[4]) {
  const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
  if (via) { _Pragma("unroll") for (int i = 0; i < 4; ++i) sh[ty + 8 * i][tx] = raw[i]; }
}
__device__ __forceinline__ void tile_get(int via, T (*sh)[33], const T raw[4], C v[4]) {
  const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
  _Pragma("unroll") for (int i = 0; i < 4; ++i) v[i] = ld(via ? sh[tx][ty + 8 * i] : raw[i]);
}

// The output of this thread's four elements; the tile's shared memory is free again after.
__device__ __forceinline__ void tile_store(T* o, const Tl& L, i64 r0, i64 c0, const C z[4]) {
  const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
  _Pragma("unroll") for (int i = 0; i < 4; ++i) {
    const i64 r = r0 + ty + 8 * i, c = c0 + tx;
    if (r < L.R && c < L.C) o[r * L.sr[2] + c * L.sc[2]] = st(z[i]);
  }
  __syncthreads();
}

// Block b takes tiles b, b + gridDim.x, ...; neighbouring tiles share a band of rows. PF 1
// (`NAME_tiledp`, where a config sets `tiled_prefetch`): the next tile's loads are issued once
// this tile's values are out of shared memory and registers, before its results are computed
// and stored, so that they fly during the stores and the barrier; PF 0 loads each tile after
// the previous one is stored.
#define TILE_AT(t, r0, c0) const i64 r0 = (t) / tc * 32, c0 = (t) % tc * 32

template <int PF, class F> __device__ __forceinline__ void binary_tiled(u64 pa, u64 pb, u64 po, const Tl& L, F f) {
  __shared__ T sa[32][33], sb[32][33];
  const i64 tc = (L.C + 31) / 32, tiles = (L.R + 31) / 32 * tc;
  T ra[4], rb[4];
  i64 t = blockIdx.x;
  if (PF && t < tiles) {
    TILE_AT(t, r0, c0);
    tile_fetch((const T*)pa, L.sr[0], L.sc[0], L.via[0], L, r0, c0, ra);
    tile_fetch((const T*)pb, L.sr[1], L.sc[1], L.via[1], L, r0, c0, rb);
  }
  for (; t < tiles; t += gridDim.x) {
    TILE_AT(t, r0, c0);
    C x[4], y[4], z[4];
    if (!PF) {
      tile_fetch((const T*)pa, L.sr[0], L.sc[0], L.via[0], L, r0, c0, ra);
      tile_fetch((const T*)pb, L.sr[1], L.sc[1], L.via[1], L, r0, c0, rb);
    }
    tile_put(L.via[0], sa, ra);
    tile_put(L.via[1], sb, rb);
    __syncthreads();
    tile_get(L.via[0], sa, ra, x);
    tile_get(L.via[1], sb, rb, y);
    if (PF && t + gridDim.x < tiles) {
      TILE_AT(t + gridDim.x, rn, cn);
      tile_fetch((const T*)pa, L.sr[0], L.sc[0], L.via[0], L, rn, cn, ra);
      tile_fetch((const T*)pb, L.sr[1], L.sc[1], L.via[1], L, rn, cn, rb);
    }
    _Pragma("unroll") for (int i = 0; i < 4; ++i) z[i] = f(x[i], y[i]);
    tile_store((T*)po, L, r0, c0, z);
  }
}

template <int PF, class F> __device__ __forceinline__ void unary_tiled(u64 pa, u64 po, const Tl& L, F f) {
  __shared__ T sa[32][33];
  const i64 tc = (L.C + 31) / 32, tiles = (L.R + 31) / 32 * tc;
  T ra[4];
  i64 t = blockIdx.x;
  if (PF && t < tiles) {
    TILE_AT(t, r0, c0);
    tile_fetch((const T*)pa, L.sr[0], L.sc[0], L.via[0], L, r0, c0, ra);
  }
  for (; t < tiles; t += gridDim.x) {
    TILE_AT(t, r0, c0);
    C x[4], z[4];
    if (!PF) tile_fetch((const T*)pa, L.sr[0], L.sc[0], L.via[0], L, r0, c0, ra);
    tile_put(L.via[0], sa, ra);
    __syncthreads();
    tile_get(L.via[0], sa, ra, x);
    if (PF && t + gridDim.x < tiles) {
      TILE_AT(t + gridDim.x, rn, cn);
      tile_fetch((const T*)pa, L.sr[0], L.sc[0], L.via[0], L, rn, cn, ra);
    }
    _Pragma("unroll") for (int i = 0; i < 4; ++i) z[i] = f(x[i]);
    tile_store((T*)po, L, r0, c0, z);
  }
}

// A number operand: `NAME_vec`, `NAME_strided`, `NAME_strided32`, `NAME_halves` computing EXPR
// of the tensor's element x and the number s.
#define SCALAR_FORMS(NAME, EXPR) \
extern "C" __global__ void NAME##_vec(u64 pa, C s, u64 po, u64 n) { unary_vec<4>(pa, po, n, [s](C x) { return EXPR; }); } \
extern "C" __global__ void NAME##_strided(u64 pa, C s, u64 po, u64 n, Lay L) { unary_strided(pa, po, n, L, [s](C x) { return EXPR; }); } \
extern "C" __global__ void NAME##_strided32(u64 pa, C s, u64 po, u32 n, Lay32 L) { unary_strided32(pa, po, n, L, [s](C x) { return EXPR; }); } \
extern "C" __global__ void NAME##_halves(u64 pa, C s, u64 po, Hv V) { halves<1>(pa, 0, po, V, [s](C x, C) { return EXPR; }); }

// add, sub, ...: `NAME_vec`, `NAME_bcast`, `NAME_strided`, `NAME_strided32`, `NAME_tiled`, `NAME_tiledp`, `NAME_halves`, and
// with a number after the tensor `NAME_scalar_vec`, `NAME_scalar_strided`, `NAME_scalar_strided32`, `NAME_scalar_halves`.
#define BINARY(NAME, OP) \
struct F_##NAME { __device__ __forceinline__ C operator()(C x, C y) const { return OP(x, y); } }; \
extern "C" __global__ void NAME##_vec(u64 pa, u64 pb, u64 po, u64 n) { binary_vec(pa, pb, po, n, F_##NAME()); } \
extern "C" __global__ void NAME##_bcast(u64 pa, u64 pb, u64 po, Bc B) { binary_bcast(pa, pb, po, B, F_##NAME()); } \
extern "C" __global__ void NAME##_strided(u64 pa, u64 pb, u64 po, u64 n, Lay L) { binary_strided(pa, pb, po, n, L, F_##NAME()); } \
extern "C" __global__ void NAME##_strided32(u64 pa, u64 pb, u64 po, u32 n, Lay32 L) { binary_strided32(pa, pb, po, n, L, F_##NAME()); } \
extern "C" __global__ void __launch_bounds__(256) NAME##_tiled(u64 pa, u64 pb, u64 po, Tl L) { binary_tiled<0>(pa, pb, po, L, F_##NAME()); } \
extern "C" __global__ void __launch_bounds__(256) NAME##_tiledp(u64 pa, u64 pb, u64 po, Tl L) { binary_tiled<1>(pa, pb, po, L, F_##NAME()); } \
extern "C" __global__ void NAME##_halves(u64 pa, u64 pb, u64 po, Hv V) { halves<2>(pa, pb, po, V, F_##NAME()); } \
SCALAR_FORMS(NAME##_scalar, OP(x, s))

// A number before the tensor (`sub(1, x)`, `div(1, x)`): `rNAME_scalar_vec`, ... computing s OP x.
#define RSCALAR(NAME, OP) SCALAR_FORMS(r##NAME##_scalar, OP(s, x))

#define UNARY(NAME, OP) \
struct F_##NAME { __device__ __forceinline__ C operator()(C x) const { return OP(x); } }; \
extern "C" __global__ void NAME##_vec(u64 pa, u64 po, u64 n) { unary_vec<4>(pa, po, n, F_##NAME()); } \
extern "C" __global__ void NAME##_vec8(u64 pa, u64 po, u64 n) { unary_vec<8>(pa, po, n, F_##NAME()); } \
extern "C" __global__ void NAME##_vec1(u64 pa, u64 po, u64 n) { unary_vec<1>(pa, po, n, F_##NAME()); } \
extern "C" __global__ void NAME##_strided(u64 pa, u64 po, u64 n, Lay L) { unary_strided(pa, po, n, L, F_##NAME()); } \
extern "C" __global__ void NAME##_strided32(u64 pa, u64 po, u32 n, Lay32 L) { unary_strided32(pa, po, n, L, F_##NAME()); } \
extern "C" __global__ void __launch_bounds__(256) NAME##_tiled(u64 pa, u64 po, Tl L) { unary_tiled<0>(pa, po, L, F_##NAME()); } \
extern "C" __global__ void __launch_bounds__(256) NAME##_tiledp(u64 pa, u64 po, Tl L) { unary_tiled<1>(pa, po, L, F_##NAME()); } \
extern "C" __global__ void NAME##_halves(u64 pa, u64 po, Hv V) { halves<1>(pa, 0, po, V, [](C x, C) { return F_##NAME()(x); }); }

#define OP_ADD(x, y) ADD(x, y)
#define OP_SUB(x, y) SUB(x, y)
#define OP_MUL(x, y) MUL(x, y)
#define OP_COPY(x) (x)
BINARY(add, OP_ADD)
BINARY(sub, OP_SUB)
RSCALAR(sub, OP_SUB)
BINARY(mul, OP_MUL)
UNARY(copy, OP_COPY)

#if IS_FLOAT
// GELU, erf form: x * Phi(x), Phi(x) = erfc(-x / sqrt 2) / 2. erfc(z) for z >= 0 is
// t exp(-z^2 + P(t)), t = 1 / (1 + z / 2): one exponential and no cancellation, where
// 1 + erf(x) loses every digit for x < -4. Negative x use erfc directly, positive x 1 - erfc / 2.
// float32: the degree-9 P of Numerical Recipes' erfcc (fractional error under 1.2e-7 for every
// z). 16-bit results: a degree-5 P fitted to ln(erfc(z) e^(z^2) / t) over t >= 0.1 (z <= 18;
// beyond, x Phi(x) is below the least bfloat16), fractional error 1.6e-5, every bfloat16 and
// float16 input within 0.53 ulp of the exact result (kernels/tests/python/test_gelu_erfc.py):
// four fused multiply-adds fewer an element, where the 16-bit form is bound by arithmetic.
#if HALF
#define GELU_ERFC_P {0.21451206f, -0.66828094f, 0.43049565f, 0.27635199f, 1.0130439f, -1.2661384f}
#else
#define GELU_ERFC_P {0.17087277f, -0.82215223f, 1.48851587f, -1.13520398f, 0.27886807f, -0.18628806f, 0.09678418f, 0.37409196f, 1.00002368f, -1.26551223f}
#endif
__device__ __forceinline__ C gelu_erf(C x) {
#if IS_F64
  return 0.5 * x * erfc(-x * 0.70710678118654752440);
#else
  float z = fabsf(x) * 0.70710678118654752f;
  float t = FDIV(1.0f, 1.0f + 0.5f * z);
  const float P[] = GELU_ERFC_P;
  float p = P[0];
  _Pragma("unroll") for (int i = 1; i < (int)(sizeof(P) / sizeof(float)); ++i) p = p * t + P[i];
  float half_erfc = 0.5f * t * FEXP(p - z * z);
  return x * (x < 0.0f ? half_erfc : 1.0f - half_erfc);
#endif
}

// GELU, tanh form: 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3):
// one exponential, no cancellation for negative x.
__device__ __forceinline__ C gelu_tanh(C x) {
  C u = (C)0.79788456080286535588 * (x + (C)0.044715 * x * x * x);
  return FDIV(x, (C)1 + FEXP((C)-2 * u));
}

#define OP_DIV(x, y) ((x) / (y))
// NaN stays NaN (x < 0 is false for NaN), as in PyTorch.
#define OP_RELU(x) ((x) < (C)0 ? (C)0 : (x))
#define OP_EXP(x) FEXP(x)
// softmax over rows of one element: exp(x - x) / exp(x - x) is 1 for finite x and NaN for
// infinite or NaN x, which 1 + (x - x) gives exactly.
#define OP_SOFTMAX1(x) ((C)1 + ((x) - (x)))
BINARY(div, OP_DIV)
RSCALAR(div, OP_DIV)
UNARY(relu, OP_RELU)
UNARY(exp, OP_EXP)
UNARY(gelu, gelu_erf)
UNARY(gelu_tanh, gelu_tanh)
UNARY(softmax1, OP_SOFTMAX1)
#endif
