// Softmax rows pipelined through registers (`softmax_pipe_CN`, cu/pipe.cuh): a block's chunk
// of a row in registers (PK packs a thread) while its next row's arrives. Each element is read
// once, exponentiated once (against the thread's maximum, rescaled by the row's), written once;
// within a cluster the blocks' (max, sum) pairs meet through distributed shared memory.
// float64 has no instance (its registers would not hold the chunk).

#if !SOFTMAX_QUADS && !IS_F64
// Packs a thread: 32 values of C (float32: 8, 16-bit types: 4).
#define PIPE_PK (32 / VEC)

template <int CN> __device__ __forceinline__ void softmax_pipe(u64 px, u64 po, int rows, int n, const Lay& L) {
  constexpr int PK = PIPE_PK;
  extern __shared__ __align__(16) unsigned char smem_row[];
  Pack* sh = (Pack*)smem_row;
  const int c = CN > 1 ? (int)(blockIdx.x % CN) : 0, nt = blockDim.x, step = gridDim.x / CN;
  int r = blockIdx.x / CN;
  C lone_next = NEG_INF;
  PipeChunk next = {0, 0, -1};
  if (r < rows) next = pipe_fetch<CN, PK>((const T*)px + r * L.s0[0], n, c, sh, lone_next, NEG_INF);
  for (int round = 0; r < rows; r += step, ++round) {
    const PipeChunk k = next;
    const C lone = lone_next;
    cp_async_wait_all();
    C v[PK][VEC], m = lone;
    _Pragma("unroll") for (int p = 0; p < PK; ++p) {
      const int j = threadIdx.x + p * nt;
      if (j < k.np) {
        const Pack q = sh[j];
        pack_ld(q, v[p]);
        m = max_nan(m, pack_max(q));
      } else {
        _Pragma("unroll") for (int e = 0; e < VEC; ++e) v[p][e] = NEG_INF;
      }
    }
    // This thread's packs are in registers: its places in sh take the next row's.
    if (r + step < rows) next = pipe_fetch<CN, PK>((const T*)px + (r + step) * L.s0[0], n, c, sh, lone_next, NEG_INF);
    // Weights against this thread's maximum (padding and an all -inf thread weigh 0).
    const C mt = m == NEG_INF ? (C)0 : m;
    const C wl = EXPW(lone - mt);
    C s = wl;
    _Pragma("unroll") for (int p = 0; p < PK; ++p)
      _Pragma("unroll") for (int e = 0; e < VEC; ++e) { v[p][e] = EXPW(v[p][e] - mt); s += v[p][e]; }
    C rm = m, rs = s;
    block_ms(rm, rs);
#if __CUDA_ARCH__ >= 900
    if (CN > 1) {
      __shared__ C pair[2][2];
      cluster_pairs<CN>(rm, rs, pair[round & 1], NEG_INF, (C)0, [](C& m, C& s, C m2, C s2) { ms_merge(m, s, m2, s2); });
    }
#endif
    // A fully masked row has rm = -inf and rs = 0: 0 / 0, NaN, as in PyTorch.
    const C scale = (m == NEG_INF ? (C)0 : FEXP(m - rm)) / rs;
    T* o = (T*)po + r * L.s1[0];
    Pack* op = (Pack*)(o + k.p0);
    _Pragma("unroll") for (int p = 0; p < PK; ++p) {
      const int j = threadIdx.x + p * nt;
      if (j < k.np) {
        _Pragma("unroll") for (int e = 0; e < VEC; ++e) v[p][e] *= scale;
        const Pack q = pack_st(v[p]);
        st_stream(op + j, *(const U4*)&q);
      }
    }
    if (k.lone >= 0) o[k.lone] = st(wl * scale);
  }
#if __CUDA_ARCH__ >= 900
  if (CN > 1) cluster_sync();  // no block leaves while another may read its slots
#endif
}

// The bound keeps 64 registers a thread, so that a block of 1024 threads launches.
extern "C" __global__ void __launch_bounds__(1024) softmax_pipe_1(u64 px, u64 po, i64 rows, i64 len, Lay L) { softmax_pipe<1>(px, po, (int)rows, (int)len, L); }
#if __CUDA_ARCH__ >= 900
#define SOFTMAX_PIPE(CN) \
extern "C" __global__ void __launch_bounds__(1024) __cluster_dims__(CN, 1, 1) softmax_pipe_##CN(u64 px, u64 po, i64 rows, i64 len, Lay L) { softmax_pipe<CN>(px, po, (int)rows, (int)len, L); }
SOFTMAX_PIPE(2)
SOFTMAX_PIPE(4)
SOFTMAX_PIPE(8)
#endif
#endif
