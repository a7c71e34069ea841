// C reduction kernels, called from Go through cgo (kernels_cgo.go).
//
// Every function works on raw native-layout bytes at any alignment, never
// calls back into Go and keeps no pointer after it returns. nbytes counts
// whole elements of the dtype. Each returns 1 when it handled the call and 0
// when it did not (unknown dtype/op, or a dtype it leaves to Go); the Go side
// then runs its own kernel.
#ifndef HCCL_GO_REDUCE_KERNELS_H
#define HCCL_GO_REDUCE_KERNELS_H

#include <stddef.h>

// DType and Op values: the ABI of types.go (checked by a Go test).
enum {
    HG_INT8 = 0,
    HG_UINT8 = 1,
    HG_INT32 = 2,
    HG_UINT32 = 3,
    HG_INT64 = 4,
    HG_UINT64 = 5,
    HG_FLOAT16 = 6,
    HG_FLOAT32 = 7,
    HG_FLOAT64 = 8,
    HG_BFLOAT16 = 9,
    HG_BOOL = 10,
    HG_INT16 = 11,
    HG_UINT16 = 12,
};
enum {
    HG_SUM = 0,
    HG_PROD = 1,
    HG_MAX = 2,
    HG_MIN = 3,
    HG_AVG = 4,
    HG_PREMULSUM = 5,
    HG_BAND = 6,
    HG_BOR = 7,
    HG_BXOR = 8,
};

// Instruction-set levels, in increasing order. hg_best_isa reports the best
// the host (CPU and OS) supports; callers may pass any level up to it.
enum {
    HG_ISA_GENERIC = 0,  // portable C, auto-vectorised for the baseline
    HG_ISA_AVX2 = 1,     // x86-64 AVX2 + F16C
    HG_ISA_AVX512 = 2,   // x86-64 AVX-512 F/BW/VL/DQ + F16C
};

int hg_best_isa(void);

// dst = a op b (dst may be a or b).
int hg_reduce(int isa, int dt, int op, void* dst, const void* a, const void* b, size_t nbytes);
// dst(float32) = dst op widen(src(dt)); nbytes counts src bytes.
int hg_reduce_from16(int isa, int dt, int op, void* dst, const void* src, size_t nbytes);
// dst = src * factor, for floating-point dtypes.
int hg_scale(int isa, int dt, void* dst, const void* src, double factor, size_t nbytes);
// buf /= n, for floating-point dtypes.
int hg_divide(int isa, int dt, void* buf, long n, size_t nbytes);
// Conversion between float32 and a 16-bit type; nbytes counts src bytes.
int hg_convert(int isa, int from, int to, void* dst, const void* src, size_t nbytes);

// One set of entry points per instruction-set level (kernels_impl.h).
#define HG_DECLARE_LEVEL(sfx)                                                                \
    int hg_reduce_##sfx(int dt, int op, void* dst, const void* a, const void* b, size_t nb); \
    int hg_reduce_from16_##sfx(int dt, int op, void* dst, const void* src, size_t nb);       \
    int hg_scale_##sfx(int dt, void* dst, const void* src, double factor, size_t nb);        \
    int hg_divide_##sfx(int dt, void* buf, long n, size_t nb);                               \
    int hg_convert_##sfx(int from, int to, void* dst, const void* src, size_t nb);
HG_DECLARE_LEVEL(generic)
HG_DECLARE_LEVEL(avx2)
HG_DECLARE_LEVEL(avx512)

#endif
