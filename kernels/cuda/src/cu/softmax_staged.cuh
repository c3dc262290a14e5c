// Softmax rows staged in shared memory (`softmax_smem`, `softmax_cluster_CN`,
// `softmax_cluster_part_8`), after cu/softmax.cuh in the softmax module.

#if !SOFTMAX_QUADS
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
