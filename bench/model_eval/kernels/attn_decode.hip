// Attention for decoding (SIMT fp32, all targets); a training source tried for the model
// (bench/model_eval/train_manifest_attention.txt; not in the shipped model's data,
// docs/allocate.md), never evaluated on. One query per (batch*head) and a
// workgroup per split of the keys: each thread walks keys t, t+NT, ... of its split with an
// online softmax over CH keys at a time (q and its output row in registers), then the NT
// partial (max, sum, row) triples are merged through LDS, one thread per output dimension.
// Layout: Q,O: [B*H][D], K,V: [B*H][Sk][D]; M,L: [B*H][NSPLIT]; Op: [B*H][NSPLIT][D];
// grid = (NSPLIT, B*H); a second pass (not here) merges the splits.
#include "hip_min.h"
#ifndef D
#define D 64
#endif
#ifndef NT
#define NT 64
#endif
#ifndef CH
#define CH 2
#endif
#define NEG_INF (-__builtin_inff())

KERNEL(NT) attn_decode(const float* __restrict__ Q, const float* __restrict__ K,
                       const float* __restrict__ V, float* __restrict__ Op, float* __restrict__ M,
                       float* __restrict__ L, int Sk, int nsplit, float scale) {
  __shared__ float ps[NT][D + 1];
  __shared__ float pm[NT], pl[NT];
  const unsigned t = tid_x();
  const unsigned split = bid_x();
  const size_t bh = bid_y();
  const float* Kb = K + bh * Sk * D;
  const float* Vb = V + bh * Sk * D;
  const int per = (Sk + nsplit - 1) / nsplit;
  const int k0 = split * per, k1 = k0 + per < Sk ? k0 + per : Sk;
  const float sl2 = scale * 1.44269504f;

  float q[D], o[D];
  #pragma unroll
  for (int d = 0; d < D; d += 4) {
    float4v v = *(const float4v*)&Q[bh * D + d];
    #pragma unroll
    for (int e = 0; e < 4; ++e) { q[d + e] = v[e] * sl2; o[d + e] = 0.f; }
  }
  float m = NEG_INF, l = 0.f;
  for (int j0 = k0 + t; j0 < k1; j0 += NT * CH) {
    float s[CH];
    float mx = m;
    #pragma unroll
    for (int c = 0; c < CH; ++c) {
      const int j = j0 + c * NT;
      float acc = 0.f;
      if (j < k1) {
        #pragma unroll
        for (int d = 0; d < D; d += 4) {
          float4v kv = *(const float4v*)&Kb[(size_t)j * D + d];
          #pragma unroll
          for (int e = 0; e < 4; ++e) acc = __builtin_fmaf(q[d + e], kv[e], acc);
        }
      }
      s[c] = j < k1 ? acc : NEG_INF;
      mx = fmaxf_(mx, s[c]);
    }
    const float corr = exp2f_(m - mx);
    l *= corr;
    #pragma unroll
    for (int d = 0; d < D; ++d) o[d] *= corr;
    #pragma unroll
    for (int c = 0; c < CH; ++c) {
      const int j = j0 + c * NT;
      const float p = exp2f_(s[c] - mx);
      l += p;
      if (j < k1) {
        #pragma unroll
        for (int d = 0; d < D; d += 4) {
          float4v vv = *(const float4v*)&Vb[(size_t)j * D + d];
          #pragma unroll
          for (int e = 0; e < 4; ++e) o[d + e] = __builtin_fmaf(p, vv[e], o[d + e]);
        }
      }
    }
    m = mx;
  }
  pm[t] = m;
  pl[t] = l;
  #pragma unroll
  for (int d = 0; d < D; ++d) ps[t][d] = o[d];
  __syncthreads();
  float gm = NEG_INF;
  for (int i = 0; i < NT; ++i) gm = fmaxf_(gm, pm[i]);
  for (int d = t; d < D; d += NT) {
    float acc = 0.f, sum = 0.f;
    for (int i = 0; i < NT; ++i) {
      const float w = pm[i] == NEG_INF ? 0.f : exp2f_(pm[i] - gm);
      acc = __builtin_fmaf(w, ps[i][d], acc);
      sum = __builtin_fmaf(w, pl[i], sum);
    }
    Op[(bh * nsplit + split) * D + d] = acc;
    if (d == 0) {
      M[bh * nsplit + split] = gm;
      L[bh * nsplit + split] = sum;
    }
  }
}
