// Radix-2 decimation-in-time FFT of N complex points per thread, in registers (bit-reversed
// load, log2(N) unrolled butterfly stages); twiddles from v_sin_f32/v_cos_f32, whose input is
// in revolutions. BATCH transforms per thread in a loop.
#include "hip_min.h"
#ifndef N
#define N 16
#endif
#ifndef NT
#define NT 64
#endif
#ifndef BATCH
#define BATCH 2
#endif
DEVINL constexpr int bitrev(int i, int n) {
  int r = 0;
  for (int b = 1; b < n; b <<= 1) { r = (r << 1) | (i & 1); i >>= 1; }
  return r;
}
KERNEL(NT) fft_radix2(const float2v* __restrict__ in, float2v* __restrict__ out, float scale) {
  for (int b = 0; b < BATCH; ++b) {
    const size_t base = (((size_t)bid_x() * BATCH + b) * NT + tid_x()) * N;
    float re[N], im[N];
    #pragma unroll
    for (int i = 0; i < N; ++i) {
      float2v v = in[base + bitrev(i, N)];
      re[i] = v.x; im[i] = v.y;
    }
    #pragma unroll
    for (int half = 1; half < N; half <<= 1) {
      #pragma unroll
      for (int i = 0; i < N; ++i) {
        if (i & half) continue;
        const int j = i + half;
        const float turn = -(float)(i & (half - 1)) / (float)(2 * half);
        const float c = __builtin_amdgcn_cosf(turn), s = __builtin_amdgcn_sinf(turn);
        const float tr = re[j] * c - im[j] * s, ti = re[j] * s + im[j] * c;
        re[j] = re[i] - tr; im[j] = im[i] - ti;
        re[i] += tr; im[i] += ti;
      }
    }
    #pragma unroll
    for (int i = 0; i < N; ++i) {
      float2v v; v.x = re[i] * scale; v.y = im[i] * scale;
      out[base + i] = v;
    }
  }
}
