// AVX-512 (F/BW/VL/DQ) + F16C kernels: 64-byte vectors. Compiled for x86-64
// only; the dispatcher calls them only when the CPU has these features.
#if defined(__x86_64__)
#include <immintrin.h>
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,f16c"))), \
                             apply_to = function)
#else
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,f16c")
#endif
#define HG_SFX(name) name##_avx512
#define HG_VBYTES 64
#define HG_F16C 512
#include "kernels_impl.h"
#if defined(__clang__)
#pragma clang attribute pop
#endif
#endif
