// AVX2 + F16C kernels: 32-byte vectors. Compiled for x86-64 only; the
// dispatcher calls them only when the CPU has these features.
#if defined(__x86_64__)
#include <immintrin.h>
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,f16c"))), apply_to = function)
#else
#pragma GCC target("avx2,f16c")
#endif
#define HG_SFX(name) name##_avx2
#define HG_VBYTES 32
#define HG_F16C 256
#include "kernels_impl.h"
#if defined(__clang__)
#pragma clang attribute pop
#endif
#endif
