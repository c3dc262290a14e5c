// Shared by every module: integer types, 16-bit conversions, layouts, fast division, packs,
// streaming stores, and warp / block reductions. Self-contained: NVRTC needs no CUDA headers.
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef long long i64;
#define MAXD 8

// Element strides of up to three operands over one collapsed shape (64-bit indexing).
struct Lay { int nd; int pad; i64 shape[MAXD]; i64 s0[MAXD]; i64 s1[MAXD]; i64 s2[MAXD]; };

// The same for tensors of fewer than 2^31 elements whose offsets fit 32 bits: divisions by the
// dims become a multiply-high and a shift (d = shape, q = (umulhi(i, mul) + i) >> shr, exact
// for i < 2^31).
// rounds: elements a thread takes a round in the 32-bit strided kernels (1 or 4: all loaded
// before any is stored, where a store may alias the next element's load).
struct Lay32 { int nd; u32 shape[MAXD]; u32 mul[MAXD]; u32 shr[MAXD]; int s0[MAXD]; int s1[MAXD]; int s2[MAXD]; int rounds; int tiled; };

__device__ __forceinline__ float h2f(u16 h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
__device__ __forceinline__ u16 f2h(float f) { u16 h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
// 2^t with subnormal results flushed to zero: one MUFU.EX2 (keeping them costs three more
// instructions). float16 results need no subnormal float (its own least is 2^-24).
__device__ __forceinline__ float ex2_ftz(float t) { float r; asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(t)); return r; }
__device__ __forceinline__ float b2f(u16 b) { return __uint_as_float(((u32)b) << 16); }
__device__ __forceinline__ u16 f2b(float f) {
#if __CUDA_ARCH__ >= 800
  u16 h; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h;  // one instruction
#else
  u32 u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (u16)((u >> 16) | 0x40u);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
  return (u16)(u >> 16);
#endif
}

__device__ __forceinline__ void offsets(const Lay& L, i64 i, i64& o0, i64& o1, i64& o2) {
  o0 = 0; o1 = 0; o2 = 0;
  for (int d = L.nd - 1; d >= 0; --d) {
    i64 c = i % L.shape[d];
    i = i / L.shape[d];
    o0 += c * L.s0[d]; o1 += c * L.s1[d]; o2 += c * L.s2[d];
  }
}

// Offsets of index i for the first two operands; no division for layouts of one dim (rows of a
// contiguous tensor), which is what row kernels meet most.
__device__ __forceinline__ void offsets2(const Lay& L, i64 i, i64& o0, i64& o1) {
  if (L.nd <= 1) { o0 = L.nd ? i * L.s0[0] : 0; o1 = L.nd ? i * L.s1[0] : 0; return; }
  i64 z; offsets(L, i, o0, o1, z);
}

__device__ __forceinline__ void offsets32(const Lay32& L, u32 i, int& o0, int& o1, int& o2) {
  o0 = 0; o1 = 0; o2 = 0;
  for (int d = L.nd - 1; d >= 0; --d) {
    u32 q = (__umulhi(i, L.mul[d]) + i) >> L.shr[d];
    int c = (int)(i - q * L.shape[d]);
    i = q;
    o0 += c * L.s0[d]; o1 += c * L.s1[d]; o2 += c * L.s2[d];
  }
}

#define GRID_LOOP(i, n) for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (u64)gridDim.x * blockDim.x)

struct __align__(16) U4 { u32 x, y, z, w; };

// 16-byte stores that stream past the caches (outputs read by nobody here), so they do not
// evict inputs that a second pass rereads from L2.
__device__ __forceinline__ void st_stream(void* p, U4 v) {
  asm volatile("st.global.cs.v4.u32 [%0], {%1, %2, %3, %4};" :: "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}

// 16 read-only bytes through the non-coherent (texture) path: data that every block of an SM
// rereads (a norm's weight) stays in L1.
__device__ __forceinline__ U4 ld_nc(const void* p) {
  U4 v;
  asm("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}

// 16 bytes in one load, whichever of them the caller uses: compilers narrow a pack's load to
// the elements used (every second one: a load per element), where one 16-byte load a pack
// issues a quarter or half of the instructions for the same sectors.
__device__ __forceinline__ U4 ld_v4(const void* p) {
  U4 v;
  asm("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}

// 16 bytes from global to shared memory without passing through registers (both 16-byte
// aligned); cp_async_wait_all waits for this thread's copies (a barrier then publishes them).
// Before sm_80: a plain copy through registers.
__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
#if __CUDA_ARCH__ >= 800
  u32 d;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(d) : "l"(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(d), "l"(src) : "memory");
#else
  *(U4*)dst = *(const U4*)src;
#endif
}
__device__ __forceinline__ void cp_async_wait_all() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;" ::: "memory");
#endif
}
// Groups of copies: commit closes this thread's group; cp_async_wait<N> waits until at most N of
// its latest groups are in flight (a pipeline keeps the next group going while it uses one).
__device__ __forceinline__ void cp_async_commit() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
template <int N> __device__ __forceinline__ void cp_async_wait() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;" :: "n"(N) : "memory");
#endif
}

// Thread block clusters (sm_90): the kernels that split a row over a cluster's blocks exchange
// per-block results through distributed shared memory.
#if __CUDA_ARCH__ >= 900
// Every block of the cluster at this point, its shared memory writes before it visible to all.
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// The address of *p (this block's shared memory) in the shared memory of the cluster's block
// `rank`.
__device__ __forceinline__ u32 cluster_addr(const void* p, u32 rank) {
  u32 a, ra;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra) : "r"(a), "r"(rank));
  return ra;
}
__device__ __forceinline__ float ld_cluster(const float* p, u32 rank) {
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(cluster_addr(p, rank)) : "memory");
  return v;
}
__device__ __forceinline__ double ld_cluster(const double* p, u32 rank) {
  double v;
  asm volatile("ld.shared::cluster.f64 %0, [%1];" : "=d"(v) : "r"(cluster_addr(p, rank)) : "memory");
  return v;
}
#endif

template <typename A> __device__ __forceinline__ A warp_sum(A v, int width = 32) {
  for (int o = width >> 1; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <typename A> __device__ __forceinline__ A warp_max(A v, int width = 32) {
  for (int o = width >> 1; o > 0; o >>= 1) { A u = __shfl_xor_sync(0xffffffffu, v, o); v = u > v ? u : v; }
  return v;
}

// A block-wide sum; every thread gets the result. `sh` holds 32 values.
template <typename A> __device__ __forceinline__ A block_sum(A v, A* sh) {
  int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  v = warp_sum(v);
  __syncthreads();
  if (lane == 0) sh[w] = v;
  __syncthreads();
  v = lane < nw ? sh[lane] : (A)0;
  return warp_sum(v);
}

// Two block-wide sums at once (one pair of barriers); every thread gets both. `sh` holds 64.
template <typename A> __device__ __forceinline__ void block_sum2(A& a, A& b, A* sh) {
  int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  a = warp_sum(a);
  b = warp_sum(b);
  __syncthreads();
  if (lane == 0) { sh[w] = a; sh[32 + w] = b; }
  __syncthreads();
  a = warp_sum(lane < nw ? sh[lane] : (A)0);
  b = warp_sum(lane < nw ? sh[32 + lane] : (A)0);
}
