// fp32 GEMM on matrix cores: each wave computes a WM x WN tile with MFMA 32x32x2 f32
// (v_mfma_f32_32x32x2f32, 16 accumulator floats per lane per 32x32 block), A and B fragments
// read straight from global memory, K stepped by 2.
#include "hip_min.h"
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 64
#endif
#ifndef NW
#define NW 2
#endif
#define FM (WM / 32)
#define FN (WN / 32)
KERNEL(64 * NW) mfma_sgemm(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                          int M, int N_, int K) {
  const int lane = (int)lane_id(), wave = (int)tid_x() / 64;
  const int row0 = ((int)bid_y() * NW + wave) * WM, col0 = (int)bid_x() * WN;
  float16v acc[FM][FN];
  #pragma unroll
  for (int i = 0; i < FM; ++i)
    #pragma unroll
    for (int j = 0; j < FN; ++j) acc[i][j] = (float16v){};
  for (int k = 0; k < K; k += 2) {
    float a[FM], b[FN];
    #pragma unroll
    for (int i = 0; i < FM; ++i) a[i] = A[(size_t)(row0 + i * 32 + lane % 32) * K + k + lane / 32];
    #pragma unroll
    for (int j = 0; j < FN; ++j) b[j] = B[(size_t)(k + lane / 32) * N_ + col0 + j * 32 + lane % 32];
    #pragma unroll
    for (int i = 0; i < FM; ++i)
      #pragma unroll
      for (int j = 0; j < FN; ++j) acc[i][j] = __builtin_amdgcn_mfma_f32_32x32x2f32(a[i], b[j], acc[i][j], 0, 0, 0);
  }
  #pragma unroll
  for (int i = 0; i < FM; ++i)
    #pragma unroll
    for (int j = 0; j < FN; ++j)
      #pragma unroll
      for (int r = 0; r < 16; ++r) {
        const int row = row0 + i * 32 + (r / 4) * 8 + (lane / 32) * 4 + r % 4;
        C[(size_t)row * N_ + col0 + j * 32 + lane % 32] = acc[i][j][r];
      }
}
