// Block-wide inclusive prefix sum: each thread scans EPT consecutive elements in registers,
// the per-thread totals are scanned across a wave with ds_bpermute shifts and across waves in
// LDS, then every element gets its offset added. A running carry over CHUNKS tiles per block.
#include "hip_min.h"
#ifndef NT
#define NT 256
#endif
#ifndef EPT
#define EPT 8
#endif
#ifndef CHUNKS
#define CHUNKS 4
#endif
DEVINL float shfl_up(float v, unsigned d) {
  int lane = (int)lane_id();
  float o = shfl(v, lane >= (int)d ? lane - (int)d : lane);
  return lane >= (int)d ? o : 0.f;
}
KERNEL(NT) scan_tiles(const float* __restrict__ in, float* __restrict__ out, int n) {
  __shared__ float wave_tot[NT / 32];
  const unsigned t = tid_x(), ws = wave_size(), w = t / ws, lane = lane_id();
  float carry = 0.f;
  #pragma unroll 1
  for (int chunk = 0; chunk < CHUNKS; ++chunk) {
    const int base = ((int)bid_x() * CHUNKS + chunk) * NT * EPT + (int)t * EPT;
    float v[EPT];
    #pragma unroll
    for (int e = 0; e < EPT; ++e) v[e] = base + e < n ? in[base + e] : 0.f;
    #pragma unroll
    for (int e = 1; e < EPT; ++e) v[e] += v[e - 1];
    float tot = v[EPT - 1];
    for (unsigned d = 1; d < ws; d <<= 1) tot += shfl_up(tot, d);
    if (lane == ws - 1) wave_tot[w] = tot;
    __syncthreads();
    float before = 0.f, all = 0.f;
    for (unsigned i = 0; i < NT / ws; ++i) {
      float x = wave_tot[i];
      before += i < w ? x : 0.f;
      all += x;
    }
    __syncthreads();
    const float off = carry + before + tot - v[EPT - 1];
    #pragma unroll
    for (int e = 0; e < EPT; ++e)
      if (base + e < n) out[base + e] = v[e] + off;
    carry += all;
  }
}
