// Flash-attention forward on RDNA3 matrix cores (WMMA 16x16x16 f16, gfx11, wave32); a training
// source tried for the model (bench/model_eval/train_manifest_attention.txt; not in the shipped
// model's data, docs/allocate.md), never evaluated on.
// Each wave owns 16 queries; NW waves per workgroup share K/V tiles of 16*NS keys in LDS.
// S^T = K * Q^T puts one query per lane (keys 2e + lane/16 for e = 0..7), so the softmax
// statistics are lane-local plus one exchange with lane ^ 16; the two halves of P^T are
// interleaved through that exchange into the B operand of O^T += V^T * P^T.
// Layout: Q,O: [B*H][Sq][D], K,V: [B*H][Sk][D] (fp16); grid = (ceil(Sq/(16*NW)), B*H).
#include "hip_min.h"
#ifndef D
#define D 64
#endif
#ifndef NW
#define NW 4
#endif
#ifndef NS
#define NS 1
#endif
#define KT (16 * NS)
#define NEG_INF (-__builtin_inff())

KERNEL(32 * NW) flash_attn_wmma(const half* __restrict__ Q, const half* __restrict__ K,
                                const half* __restrict__ V, half* __restrict__ O,
                                int Sq, int Sk, float scale) {
  __shared__ __attribute__((aligned(32))) half Ks[KT][D + 16];
  __shared__ __attribute__((aligned(32))) half Vs[KT][D + 16];
  const unsigned t = tid_x();
  const unsigned lane = t % 32, wave = t / 32;
  const unsigned li = lane % 16, hi = lane / 16;
  const size_t bh = bid_y();
  const half* Qb = Q + bh * Sq * D;
  const half* Kb = K + bh * Sk * D;
  const half* Vb = V + bh * Sk * D;
  half* Ob = O + bh * Sq * D;
  const int qm = bid_x() * 16 * NW + wave * 16 + li;  // this lane's query
  const float sl2 = scale * 1.44269504f;

  half16v qf[D / 16];
  #pragma unroll
  for (int s = 0; s < D / 16; ++s)
    qf[s] = qm < Sq ? *(const half16v*)&Qb[(size_t)qm * D + s * 16] : half16v{};
  float8v oT[D / 16];
  #pragma unroll
  for (int dt = 0; dt < D / 16; ++dt) oT[dt] = float8v{};
  float m = NEG_INF, l = 0.f;

  for (int kv0 = 0; kv0 < Sk; kv0 += KT) {
    #pragma unroll
    for (int v = t; v < KT * D / 8; v += 32 * NW) {
      int r = v / (D / 8), c = (v % (D / 8)) * 8;
      bool in = kv0 + r < Sk;
      *(half8v*)&Ks[r][c] = in ? *(const half8v*)&Kb[(size_t)(kv0 + r) * D + c] : half8v{};
      *(half8v*)&Vs[r][c] = in ? *(const half8v*)&Vb[(size_t)(kv0 + r) * D + c] : half8v{};
    }
    __syncthreads();
    // S^T[key][query], one 16-key tile per ns
    float8v sT[NS];
    float mx = m;
    #pragma unroll
    for (int ns = 0; ns < NS; ++ns) {
      sT[ns] = float8v{};
      #pragma unroll
      for (int s = 0; s < D / 16; ++s) {
        half16v kf = *(const half16v*)&Ks[ns * 16 + li][s * 16];
        sT[ns] = __builtin_amdgcn_wmma_f32_16x16x16_f16_w32(kf, qf[s], sT[ns]);
      }
      #pragma unroll
      for (int e = 0; e < 8; ++e) {
        int key = kv0 + ns * 16 + 2 * e + hi;
        float sv = key < Sk ? sT[ns][e] * sl2 : NEG_INF;
        sT[ns][e] = sv;
        mx = fmaxf_(mx, sv);
      }
    }
    mx = fmaxf_(mx, shfl_xor(mx, 16));
    const float corr = exp2f_(m - mx);
    l *= corr;
    #pragma unroll
    for (int dt = 0; dt < D / 16; ++dt) oT[dt] *= corr;
    #pragma unroll
    for (int ns = 0; ns < NS; ++ns) {
      half16v pf;
      #pragma unroll
      for (int e = 0; e < 8; ++e) {
        float p = exp2f_(sT[ns][e] - mx);
        l += p;
        float other = shfl_xor(p, 16);
        pf[2 * e] = (half)(hi ? other : p);
        pf[2 * e + 1] = (half)(hi ? p : other);
      }
      // O^T[d][query] += V^T[d][key] * P^T[key][query]
      #pragma unroll
      for (int dt = 0; dt < D / 16; ++dt) {
        half16v vf;
        #pragma unroll
        for (int k = 0; k < 16; ++k) vf[k] = Vs[ns * 16 + k][dt * 16 + li];
        oT[dt] = __builtin_amdgcn_wmma_f32_16x16x16_f16_w32(vf, pf, oT[dt]);
      }
    }
    m = mx;
    __syncthreads();
  }
  l += shfl_xor(l, 16);
  const float inv = 1.f / l;
  if (qm < Sq) {
    #pragma unroll
    for (int dt = 0; dt < D / 16; ++dt)
      #pragma unroll
      for (int e = 0; e < 8; ++e)
        Ob[(size_t)qm * D + dt * 16 + 2 * e + hi] = (half)(oT[dt][e] * inv);
  }
}
