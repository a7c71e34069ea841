// Picks the kernels for an instruction-set level. Explicit levels (instead
// of ifunc-based target_clones) let the tests run every level the host has.
#include "kernels.h"

#if defined(__x86_64__)
#define HG_X86 1
#else
#define HG_X86 0
#endif

int hg_best_isa(void) {
#if HG_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("f16c")) {
        return HG_ISA_AVX512;
    }
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c")) {
        return HG_ISA_AVX2;
    }
#endif
    return HG_ISA_GENERIC;
}

#if HG_X86
#define HG_DISPATCH(fn, ...)                                 \
    switch (isa) {                                           \
        case HG_ISA_AVX512: return fn##_avx512(__VA_ARGS__); \
        case HG_ISA_AVX2: return fn##_avx2(__VA_ARGS__);     \
        default: return fn##_generic(__VA_ARGS__);           \
    }
#else
#define HG_DISPATCH(fn, ...) \
    (void)isa;               \
    return fn##_generic(__VA_ARGS__);
#endif

int hg_reduce(int isa, int dt, int op, void* dst, const void* a, const void* b, size_t nb) {
    HG_DISPATCH(hg_reduce, dt, op, dst, a, b, nb)
}

int hg_reduce_from16(int isa, int dt, int op, void* dst, const void* src, size_t nb) {
    HG_DISPATCH(hg_reduce_from16, dt, op, dst, src, nb)
}

int hg_scale(int isa, int dt, void* dst, const void* src, double factor, size_t nb) {
    HG_DISPATCH(hg_scale, dt, dst, src, factor, nb)
}

int hg_divide(int isa, int dt, void* buf, long n, size_t nb) { HG_DISPATCH(hg_divide, dt, buf, n, nb) }

int hg_convert(int isa, int from, int to, void* dst, const void* src, size_t nb) {
    HG_DISPATCH(hg_convert, from, to, dst, src, nb)
}
