// Direct 2D convolution, NCHW, KS x KS filter, stride 1, no padding: each thread computes OPT
// horizontally adjacent outputs for OC output channels, looping over the input channels; the
// filter weights are uniform across the block (scalar loads into SGPRs).
#include "hip_min.h"
#ifndef KS
#define KS 3
#endif
#ifndef OPT
#define OPT 4
#endif
#ifndef OC
#define OC 2
#endif
#ifndef NT
#define NT 128
#endif
KERNEL(NT) conv2d_direct(const float* __restrict__ x, const float* __restrict__ wgt, const float* __restrict__ bias,
                         float* __restrict__ y, int C, int H, int W) {
  const int OH = H - KS + 1, OW = W - KS + 1;
  const int oc0 = (int)bid_z() * OC;
  const int oy = (int)bid_y();
  const int ox0 = ((int)bid_x() * NT + (int)tid_x()) * OPT;
  float acc[OC][OPT];
  #pragma unroll
  for (int o = 0; o < OC; ++o)
    #pragma unroll
    for (int p = 0; p < OPT; ++p) acc[o][p] = bias[oc0 + o];
  for (int c = 0; c < C; ++c) {
    const float* xc = x + (size_t)c * H * W;
    #pragma unroll
    for (int ky = 0; ky < KS; ++ky) {
      float row[OPT + KS - 1];
      #pragma unroll
      for (int i = 0; i < OPT + KS - 1; ++i) {
        int xx = ox0 + i;
        row[i] = xx < W ? xc[(size_t)(oy + ky) * W + xx] : 0.f;
      }
      #pragma unroll
      for (int o = 0; o < OC; ++o)
        #pragma unroll
        for (int kx = 0; kx < KS; ++kx) {
          float wv = wgt[(((size_t)(oc0 + o) * C + c) * KS + ky) * KS + kx];
          #pragma unroll
          for (int p = 0; p < OPT; ++p) acc[o][p] = __builtin_fmaf(wv, row[p + kx], acc[o][p]);
        }
    }
  }
  #pragma unroll
  for (int o = 0; o < OC; ++o)
    #pragma unroll
    for (int p = 0; p < OPT; ++p)
      if (ox0 + p < OW) y[((size_t)(oc0 + o) * OH + oy) * OW + ox0 + p] = acc[o][p];
}
