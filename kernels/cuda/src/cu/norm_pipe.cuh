// layer_norm and rms_norm rows pipelined through registers (`NAME_pipe_CN`, cu/pipe.cuh): a
// block's chunk of a row in registers as x's own packs (8 a thread: half the registers of floats
// for 16-bit types, so one block holds a bfloat16 row of 65536), while its next row's arrives.
// Statistics of values shifted by the row's first element (loaded a round ahead), one block
// reduction of the pair; within a cluster the blocks' pairs are added once a row
// (`cluster_pairs`), to the same statistics in every block. Aligned rows of whole packs, weight
// and bias as packs or absent (the planner checks): an instance for other rows, with
// element-wise weights and lone elements, spills.

#define NP_PK 8
template <int OPK, int CN> __device__ __forceinline__ void norm_pipe(u64 px, u64 po, u64 pw, u64 pb, int rows, int n, const Lay& L, double eps) {
  extern __shared__ __align__(16) unsigned char smem_row[];
  Pack* sh = (Pack*)smem_row;
  __shared__ C red[64];
  const T* w = (const T*)pw; const T* b = (const T*)pb;
  const int c = CN > 1 ? (int)(blockIdx.x % CN) : 0, nt = blockDim.x, step = gridDim.x / CN;
  int r = blockIdx.x / CN;
  C none, shift_next = 0;  // no lone elements in aligned rows of whole packs
  PipeChunk next = {0, 0, -1};
  if (r < rows) {
    const T* x = (const T*)px + r * L.s0[0];
    next = pipe_fetch<CN, NP_PK, 0>(x, n, c, sh, none, (C)0);
    if (OPK == 0) shift_next = ld(x[0]);
  }
  for (int round = 0; r < rows; r += step, ++round) {
    const PipeChunk k = next;
    const C shift = shift_next;
    cp_async_wait_all();
    Pack v[NP_PK];
    _Pragma("unroll") for (int p = 0; p < NP_PK; ++p) {
      const int j = threadIdx.x + p * nt;
      if (j < k.np) v[p] = sh[j];
    }
    // This thread's packs are in registers: its places in sh take the next row's.
    if (r + step < rows) {
      const T* x = (const T*)px + (r + step) * L.s0[0];
      next = pipe_fetch<CN, NP_PK, 0>(x, n, c, sh, none, (C)0);
      if (OPK == 0) shift_next = ld(x[0]);
    }
    C s = 0, q2 = 0;
    _Pragma("unroll") for (int p = 0; p < NP_PK; ++p) {
      const bool ok = (int)threadIdx.x + p * nt < k.np;
      _Pragma("unroll") for (int e = 0; e < VEC; ++e) {
        const C d = ok ? ld(v[p].v[e]) - shift : (C)0;
        s += d;
        q2 += d * d;
      }
    }
    block_sum2(s, q2, red);
#if __CUDA_ARCH__ >= 900
    if (CN > 1) {
      __shared__ C pair[2][2];
      cluster_pairs<CN>(s, q2, pair[round & 1], (C)0, (C)0, [](C& x, C& y, C x2, C y2) { x += x2; y += y2; });
    }
#endif
    // rms_norm: no shift, no mean: the mean square.
    const C dm = OPK == 0 ? s / (C)n : (C)0, var = q2 / (C)n - dm * dm;
    const C rstd = RSQRT((var > (C)0 ? var : (C)0) + (C)eps), mean = shift + dm;
    T* o = (T*)po + r * L.s1[0];
    Pack* op = (Pack*)(o + k.p0);
    const T* wc = w ? w + k.p0 : w;
    const T* bc = b ? b + k.p0 : b;
    _Pragma("unroll") for (int p = 0; p < NP_PK; ++p) {
      const int j = threadIdx.x + p * nt;
      if (j < k.np) {
        const Pack q = norm_pack(v[p], mean, rstd, wc, bc, 0, j, 0, 0, 1);
        st_stream(op + j, *(const U4*)&q);
      }
    }
  }
#if __CUDA_ARCH__ >= 900
  if (CN > 1) cluster_sync();  // no block leaves while another may read its sums
#endif
}

#define NORM_PIPE_PASS px, po, pw, pb, (int)rows, (int)len, L, eps
// The bound keeps 64 registers a thread, so that a block of 1024 threads launches.
extern "C" __global__ void __launch_bounds__(1024) layer_norm_pipe_1(NORM_ARGS) { norm_pipe<0, 1>(NORM_PIPE_PASS); }
extern "C" __global__ void __launch_bounds__(1024) rms_norm_pipe_1(NORM_ARGS) { norm_pipe<1, 1>(NORM_PIPE_PASS); }
#if __CUDA_ARCH__ >= 900
#define NORM_PIPES(NAME, OPK, CN) \
extern "C" __global__ void __launch_bounds__(1024) __cluster_dims__(CN, 1, 1) NAME##_pipe_##CN(NORM_ARGS) { norm_pipe<OPK, CN>(NORM_PIPE_PASS); }
NORM_PIPES(layer_norm, 0, 2)
NORM_PIPES(layer_norm, 0, 4)
NORM_PIPES(layer_norm, 0, 8)
NORM_PIPES(rms_norm, 1, 2)
NORM_PIPES(rms_norm, 1, 4)
NORM_PIPES(rms_norm, 1, 8)
#endif
