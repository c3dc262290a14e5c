// Softmax rows back to back staged in tiles (`softmax_tile_G_N`, `softmax_tileh_G_N`, and in
// the `softmax_quads` module `softmax_tileq_G_N`), after cu/softmax.cuh.

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
