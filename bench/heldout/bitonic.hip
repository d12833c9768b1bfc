// Bitonic sorting network over N key/value pairs held in registers by each thread (fully
// unrolled compare-exchange stages), then a merge of neighbouring threads' runs through LDS
// is left to the next kernel: each thread writes its sorted run back.
#include "hip_min.h"
#ifndef NT
#define NT 128
#endif
#ifndef N
#define N 16
#endif
#ifndef KV
#define KV 1
#endif
DEVINL void cas(float& a, float& b, unsigned& va, unsigned& vb, bool up) {
  bool sw = up ? (a > b) : (a < b);
  float ta = sw ? b : a, tb = sw ? a : b;
  a = ta; b = tb;
#if KV
  unsigned ua = sw ? vb : va, ub = sw ? va : vb;
  va = ua; vb = ub;
#endif
}
KERNEL(NT) bitonic_runs(float* __restrict__ keys, unsigned* __restrict__ vals) {
  const size_t base = ((size_t)bid_x() * NT + tid_x()) * N;
  float k[N];
  unsigned v[N];
  #pragma unroll
  for (int i = 0; i < N; ++i) {
    k[i] = keys[base + i];
#if KV
    v[i] = vals[base + i];
#else
    v[i] = 0u;
#endif
  }
  #pragma unroll
  for (int size = 2; size <= N; size <<= 1) {
    #pragma unroll
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      #pragma unroll
      for (int i = 0; i < N; ++i) {
        int j = i ^ stride;
        if (j > i) cas(k[i], k[j], v[i], v[j], (i & size) == 0);
      }
    }
  }
  #pragma unroll
  for (int i = 0; i < N; ++i) {
    keys[base + i] = k[i];
#if KV
    vals[base + i] = v[i];
#endif
  }
}
