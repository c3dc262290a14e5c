// Rows pipelined through registers (the softmax and norm `_pipe_CN` kernels): a persistent grid,
// as many blocks as the device holds at once, each block keeping its chunk of one row in
// registers while the same chunk of its next row arrives in shared memory by 16-byte
// asynchronous copies. Each thread copies exactly the packs it later reads, so no barrier guards
// the buffer: a thread reads its packs into registers, then starts the copies for the next row
// into the same places, and computes and writes while they fly. CN blocks a row (a thread block
// cluster where CN > 1, sm_90 on) exchange their partial results through distributed shared
// memory, one cluster barrier a row. Rows back to back, fewer than 2^30 of them (a row's place
// is its index times the stride, a product of kernel parameters rather than registers kept
// across the round); x and out at the same distance from alignment in every row (the planners
// check), so a pack of x is a pack of out.

// Where a row's chunk for block `c` of a cluster of CN lies: packs [p0, p0 + np * VEC) of the
// row, and this thread's lone element (-1: none): threads [0, head) take the elements before the
// row's first 16-byte boundary (chunk 0), threads [VEC, VEC + tail) those after its last whole
// pack (the last chunk). Offsets only: a thread holds two rows' worth, and its registers are
// mostly values.
struct PipeChunk { int p0, np, lone; };

// Row x's chunk: starts the copies of this thread's packs (PK at most, blockDim.x apart) into
// sh, and loads its lone element into `lone` (`absent` where it has none), a round ahead of use.
// LONE 0: rows of whole aligned packs (no lone elements; nothing loaded, no register kept).
template <int CN, int PK, int LONE = 1> __device__ __forceinline__ PipeChunk pipe_fetch(const T* x, int n, int c, Pack* sh, C& lone, C absent) {
  const int head = (int)peel(x, 0, n), npk = (n - head) / VEC, cp = (npk + CN - 1) / CN;
  const int a = npk < c * cp ? npk : c * cp, b = npk < a + cp ? npk : a + cp;
  const int tail0 = head + npk * VEC, t = threadIdx.x;
  PipeChunk k;
  k.p0 = head + a * VEC;
  k.np = b - a;
  k.lone = -1;
  if (LONE && c == 0 && t < head) k.lone = t;
  if (LONE && c == CN - 1 && t >= VEC && t - VEC < n - tail0) k.lone = tail0 + t - VEC;
  const Pack* xp = (const Pack*)(x + k.p0);
  _Pragma("unroll") for (int p = 0; p < PK; ++p) {
    const int j = t + p * blockDim.x;
    if (j < k.np) cp_async16(sh + j, xp + j);
  }
  lone = LONE && k.lone >= 0 ? ld(x[k.lone]) : absent;
  return k;
}

#if __CUDA_ARCH__ >= 900
// Every block's pair (a, b) of a cluster of CN merged by `merge`, the same pair in every block:
// thread 0 puts its block's in `slot` (two values of this block's shared memory, by the parity of
// the row's round, so that a block may write the next round's while a slower one still reads
// this round's), and after one cluster barrier lane q of every warp reads block q's through
// distributed shared memory (the CN reads at once, each crossing to another SM; the other lanes
// hold the empty pair), and shuffles merge them in the same order in every block.
template <int CN, typename F> __device__ __forceinline__ void cluster_pairs(C& a, C& b, C* slot, C empty_a, C empty_b, F merge) {
  if (threadIdx.x == 0) { slot[0] = a; slot[1] = b; }
  cluster_sync();
  const int lane = threadIdx.x & 31;
  a = empty_a;
  b = empty_b;
  if (lane < CN) { a = ld_cluster(&slot[0], lane); b = ld_cluster(&slot[1], lane); }
  _Pragma("unroll") for (int o = 16; o > 0; o >>= 1) {
    const C a2 = __shfl_xor_sync(0xffffffffu, a, o), b2 = __shfl_xor_sync(0xffffffffu, b, o);
    merge(a, b, a2, b2);
  }
}
#endif
