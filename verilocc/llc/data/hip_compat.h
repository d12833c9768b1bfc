// Included (-include) by verilocc.llc.hip before every kernel source it compiles.  Older clangs
// (15, 16) lack two builtins that examples/kernels/hip_min.h uses; with clang 19 and later
// both guards are false and this file changes nothing (the IR is byte-identical).
#pragma once
#if !__has_builtin(__builtin_amdgcn_wavefrontsize)
#define __builtin_amdgcn_wavefrontsize() __AMDGCN_WAVEFRONT_SIZE
#endif
#if !__has_builtin(__builtin_amdgcn_exp2f)
// llvm.exp2.f32; AMDGPU selects V_EXP_F32 for it (with denormal scaling in some versions).
#define __builtin_amdgcn_exp2f(x) __builtin_exp2f(x)
#endif
