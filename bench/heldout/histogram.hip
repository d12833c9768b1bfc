// Radix-sort digit histogram: each thread counts the 4-bit digits of KPT keys in NB private
// counters held in registers (NB a power of two), merges them into an LDS histogram with atomics, and the block
// adds its histogram to the global one with atomics. PASSES digit positions per launch.
#include "hip_min.h"
#ifndef NT
#define NT 256
#endif
#ifndef KPT
#define KPT 8
#endif
#ifndef PASSES
#define PASSES 2
#endif
#ifndef NB
#define NB 16
#endif
KERNEL(NT) digit_histogram(const unsigned* __restrict__ keys, unsigned* __restrict__ hist, int n, int shift0) {
  __shared__ unsigned lds[PASSES * NB];
  const unsigned t = tid_x();
  if (t < PASSES * NB) lds[t] = 0u;
  __syncthreads();
  unsigned k[KPT];
  const int base = (int)bid_x() * NT * KPT + (int)t;
  #pragma unroll
  for (int i = 0; i < KPT; ++i) k[i] = base + i * NT < n ? keys[base + i * NT] : 0xffffffffu;
  #pragma unroll
  for (int p = 0; p < PASSES; ++p) {
    unsigned c[NB];
    #pragma unroll
    for (int b = 0; b < NB; ++b) c[b] = 0u;
    const int sh = shift0 + 4 * p;
    #pragma unroll
    for (int i = 0; i < KPT; ++i) {
      unsigned d = (k[i] >> sh) & (NB - 1);
      #pragma unroll
      for (int b = 0; b < NB; ++b) c[b] += d == (unsigned)b ? 1u : 0u;
    }
    #pragma unroll
    for (int b = 0; b < NB; ++b)
      if (c[b]) __atomic_fetch_add(&lds[p * NB + b], c[b], __ATOMIC_RELAXED);
  }
  __syncthreads();
  if (t < PASSES * NB && lds[t]) __atomic_fetch_add(&hist[t], lds[t], __ATOMIC_RELAXED);
}
