// Row layer normalisation y = (x - mean) / sqrt(var + eps) * gamma + beta: one workgroup per
// row, EPT elements per thread in registers, mean and variance from one pass of (sum, sum of
// squares) reduced across the wave with ds_bpermute and across waves in LDS.
#include "hip_min.h"
#ifndef NT
#define NT 128
#endif
#ifndef EPT
#define EPT 8
#endif
KERNEL(NT) layernorm_row(const float* __restrict__ X, const float* __restrict__ gamma, const float* __restrict__ beta,
                         float* __restrict__ Y, int ncols, float eps) {
  __shared__ float red[2][NT / 32];
  const unsigned t = tid_x(), ws = wave_size(), w = t / ws, lane = lane_id();
  const float* x = X + (size_t)bid_x() * ncols;
  float* y = Y + (size_t)bid_x() * ncols;
  float v[EPT];
  float s = 0.f, ss = 0.f;
  #pragma unroll
  for (int e = 0; e < EPT; ++e) {
    int c = e * NT + (int)t;
    v[e] = c < ncols ? x[c] : 0.f;
    s += v[e];
    ss = __builtin_fmaf(v[e], v[e], ss);
  }
  for (unsigned m = ws / 2; m > 0; m >>= 1) { s += shfl_xor(s, m); ss += shfl_xor(ss, m); }
  if (lane == 0) { red[0][w] = s; red[1][w] = ss; }
  __syncthreads();
  s = 0.f; ss = 0.f;
  for (unsigned i = 0; i < NT / ws; ++i) { s += red[0][i]; ss += red[1][i]; }
  const float mean = s / (float)ncols;
  const float var = ss / (float)ncols - mean * mean;
  const float rstd = __builtin_amdgcn_rsqf(var + eps);
  #pragma unroll
  for (int e = 0; e < EPT; ++e) {
    int c = e * NT + (int)t;
    if (c < ncols) y[c] = (v[e] - mean) * rstd * gamma[c] + beta[c];
  }
}
