// After the dtype's prelude, for every family: the 16-byte pack of elements, the start of a row,
// and the peel to a 16-byte boundary.
struct __align__(16) Pack { T v[VEC]; };

__device__ __forceinline__ void row_start(const Lay& L, i64 r, i64& ox, i64& oo) { offsets2(L, r, ox, oo); }

// The elements before x + lo reaches a 16-byte boundary, at most hi - lo.
__device__ __forceinline__ i64 peel(const T* x, i64 lo, i64 hi) {
  i64 mis = (i64)(((u64)(x + lo) / sizeof(T)) % VEC);
  i64 head = mis ? VEC - mis : 0;
  return head < hi - lo ? head : hi - lo;
}
