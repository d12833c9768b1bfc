// 3D star stencil of radius R (6R+1 points) marching along z: each thread keeps the 2R+1
// values of its column in a register queue for each of XPT x-points, the xy neighbours come
// from an LDS plane with halos. Coefficients are uniform (scalar loads).
#include "hip_min.h"
#ifndef R
#define R 4
#endif
#ifndef BX
#define BX 32
#endif
#ifndef BY
#define BY 8
#endif
#ifndef XPT
#define XPT 1
#endif
#define TX (BX * XPT)
KERNEL(BX * BY) star3d(const float* __restrict__ in, float* __restrict__ out, const float* __restrict__ coef,
                       int nx, int ny, int nz) {
  __shared__ float plane[(BY + 2 * R) * (TX + 2 * R)];
  const int tx = (int)tid_x() % BX, ty = (int)tid_x() / BX;
  const int gx0 = (int)bid_x() * TX + tx, gy = (int)bid_y() * BY + ty;
  const size_t sxy = (size_t)nx * ny;
  float q[XPT][2 * R + 1];
  #pragma unroll
  for (int p = 0; p < XPT; ++p) {
    const int gx = gx0 + p * BX;
    #pragma unroll
    for (int i = 0; i < 2 * R + 1; ++i) q[p][i] = in[(size_t)i * sxy + (size_t)gy * nx + gx];
  }
  for (int z = R; z < nz - R; ++z) {
    #pragma unroll
    for (int p = 0; p < XPT; ++p) {
      const int gx = gx0 + p * BX, lx = tx + p * BX + R, ly = ty + R;
      plane[ly * (TX + 2 * R) + lx] = q[p][R];
      if (tx < R) {
        plane[ly * (TX + 2 * R) + lx - R] = in[(size_t)z * sxy + (size_t)gy * nx + gx - R];
        plane[ly * (TX + 2 * R) + lx + BX] = in[(size_t)z * sxy + (size_t)gy * nx + gx + BX];
      }
      if (ty < R) {
        plane[(ly - R) * (TX + 2 * R) + lx] = in[(size_t)z * sxy + (size_t)(gy - R) * nx + gx];
        plane[(ly + BY) * (TX + 2 * R) + lx] = in[(size_t)z * sxy + (size_t)(gy + BY) * nx + gx];
      }
    }
    __syncthreads();
    #pragma unroll
    for (int p = 0; p < XPT; ++p) {
      const int gx = gx0 + p * BX, lx = tx + p * BX + R, ly = ty + R;
      float acc = coef[0] * q[p][R];
      #pragma unroll
      for (int r = 1; r <= R; ++r) {
        acc += coef[r] * (q[p][R - r] + q[p][R + r]);
        acc += coef[R + r] * (plane[ly * (TX + 2 * R) + lx - r] + plane[ly * (TX + 2 * R) + lx + r]);
        acc += coef[2 * R + r] * (plane[(ly - r) * (TX + 2 * R) + lx] + plane[(ly + r) * (TX + 2 * R) + lx]);
      }
      out[(size_t)z * sxy + (size_t)gy * nx + gx] = acc;
    }
    __syncthreads();
    #pragma unroll
    for (int p = 0; p < XPT; ++p) {
      const int gx = gx0 + p * BX;
      #pragma unroll
      for (int i = 0; i < 2 * R; ++i) q[p][i] = q[p][i + 1];
      q[p][2 * R] = z + R + 1 < nz ? in[(size_t)(z + R + 1) * sxy + (size_t)gy * nx + gx] : 0.f;
    }
  }
}
