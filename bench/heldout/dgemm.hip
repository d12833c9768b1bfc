// fp64 GEMM C = alpha*A*B + beta*C with LDS tiles (BM x BK of A, BK x BN of B) and a TM x TN
// register tile of doubles per thread (each accumulator takes two VGPRs).
#include "hip_min.h"
#ifndef BM
#define BM 64
#endif
#ifndef BN
#define BN 64
#endif
#ifndef BK
#define BK 8
#endif
#ifndef TM
#define TM 4
#endif
#ifndef TN
#define TN 4
#endif
#define NTHR ((BM / TM) * (BN / TN))
KERNEL(NTHR) dgemm_tile(const double* __restrict__ A, const double* __restrict__ B, double* __restrict__ C,
                        int M, int N_, int K, double alpha, double beta) {
  __shared__ double As[BK][BM];
  __shared__ double Bs[BK][BN];
  const int t = (int)tid_x(), tr = t / (BN / TN), tc = t % (BN / TN);
  const int row0 = (int)bid_y() * BM, col0 = (int)bid_x() * BN;
  double acc[TM][TN];
  #pragma unroll
  for (int i = 0; i < TM; ++i)
    #pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0;
  for (int k0 = 0; k0 < K; k0 += BK) {
    for (int i = t; i < BM * BK; i += NTHR) {
      int m = i / BK, k = i % BK;
      As[k][m] = A[(size_t)(row0 + m) * K + k0 + k];
    }
    for (int i = t; i < BK * BN; i += NTHR) {
      int k = i / BN, nn = i % BN;
      Bs[k][nn] = B[(size_t)(k0 + k) * N_ + col0 + nn];
    }
    __syncthreads();
    #pragma unroll
    for (int k = 0; k < BK; ++k) {
      double a[TM], b[TN];
      #pragma unroll
      for (int i = 0; i < TM; ++i) a[i] = As[k][tr * TM + i];
      #pragma unroll
      for (int j = 0; j < TN; ++j) b[j] = Bs[k][tc * TN + j];
      #pragma unroll
      for (int i = 0; i < TM; ++i)
        #pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = __builtin_fma(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
  #pragma unroll
  for (int i = 0; i < TM; ++i)
    #pragma unroll
    for (int j = 0; j < TN; ++j) {
      size_t idx = (size_t)(row0 + tr * TM + i) * N_ + col0 + tc * TN + j;
      C[idx] = alpha * acc[i][j] + beta * C[idx];
    }
}
