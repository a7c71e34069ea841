// Kernel bodies, compiled once per instruction-set level. The including file
// defines HG_SFX(name) (entry-point suffix), HG_VBYTES (vector width in
// bytes) and HG_F16C (0, or the F16C vector width in bits: 256 or 512).
//
// The semantics are those of the pure-Go kernels (generic.go, half.go,
// scale_go.go), bit for bit. Loads and stores go through memcpy, so buffers
// may have any alignment and dst may alias a source: each block is loaded
// before it is stored.
#include <stdint.h>
#include <string.h>

#include "kernels.h"

#define VEC(T) T __attribute__((vector_size(HG_VBYTES)))
typedef VEC(int8_t) v_i8;
typedef VEC(uint8_t) v_u8;
typedef VEC(int16_t) v_i16;
typedef VEC(uint16_t) v_u16;
typedef VEC(int32_t) v_i32;
typedef VEC(uint32_t) v_u32;
typedef VEC(int64_t) v_i64;
typedef VEC(uint64_t) v_u64;
typedef VEC(float) v_f32;
typedef VEC(double) v_f64;
// Half as many uint16 lanes as a float vector has bytes / 2: one 16-bit
// element per float32 lane.
typedef uint16_t v_u16h __attribute__((vector_size(HG_VBYTES / 2)));

#define LOAD(v, p) memcpy(&(v), (p), sizeof(v))
#define STORE(p, v) memcpy((p), &(v), sizeof(v))

// Unrolling helps the small (cache-resident) sizes; large ones are bound by
// memory bandwidth.
#define UNROLL _Pragma("GCC unroll 4")

// ---- scalar helpers, identical to the Go ones --------------------------

static inline uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static inline float bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static inline uint64_t f64_bits(double f) {
    uint64_t u;
    memcpy(&u, &f, 8);
    return u;
}
static inline double bits_f64(uint64_t u) {
    double f;
    memcpy(&f, &u, 8);
    return f;
}

// NaN propagates (a first); among zeros Max prefers +0 and Min -0.
static inline float smax_f32(float a, float b) {
    if (a != a) return a;
    if (b != b) return b;
    if (a > b) return a;
    if (a < b) return b;
    return bits_f32(f32_bits(a) & f32_bits(b));
}
static inline float smin_f32(float a, float b) {
    if (a != a) return a;
    if (b != b) return b;
    if (a < b) return a;
    if (a > b) return b;
    return bits_f32(f32_bits(a) | f32_bits(b));
}
static inline double smax_f64(double a, double b) {
    if (a != a) return a;
    if (b != b) return b;
    if (a > b) return a;
    if (a < b) return b;
    return bits_f64(f64_bits(a) & f64_bits(b));
}
static inline double smin_f64(double a, double b) {
    if (a != a) return a;
    if (b != b) return b;
    if (a < b) return a;
    if (a > b) return b;
    return bits_f64(f64_bits(a) | f64_bits(b));
}

static inline float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (exp == 0x1f) return bits_f32(sign | 0x7f800000 | (man ? 0x400000 | man << 13 : 0));
    if (exp == 0) {
        if (man == 0) return bits_f32(sign);
        uint32_t e = 127 - 15 + 1;
        while (!(man & 0x400)) {
            man <<= 1;
            e--;
        }
        return bits_f32(sign | e << 23 | (man & 0x3ff) << 13);
    }
    return bits_f32(sign | (exp + 127 - 15) << 23 | man << 13);
}

static inline uint16_t f32_to_f16(float f) {
    uint32_t b = f32_bits(f);
    uint16_t sign = (b >> 16) & 0x8000;
    int32_t exp = (b >> 23) & 0xff;
    uint32_t man = b & 0x7fffff;
    if (exp == 0xff) return man ? sign | 0x7e00 | (man >> 13) : sign | 0x7c00;
    int32_t e = exp - 127 + 15;
    if (e >= 0x1f) return sign | 0x7c00;
    if (e <= 0) {
        if (e < -10) return sign;
        uint32_t m = man | 0x800000, shift = (uint32_t)(14 - e);
        uint32_t h = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1))) h++;
        return sign | (uint16_t)h;
    }
    uint32_t h = (uint32_t)e << 10 | man >> 13, rem = man & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++;
    return sign | (uint16_t)h;
}

static inline float bf16_to_f32(uint16_t h) { return bits_f32((uint32_t)h << 16); }

static inline uint16_t f32_to_bf16(float f) {
    uint32_t b = f32_bits(f);
    if ((b & 0x7fffffff) > 0x7f800000) return (uint16_t)(b >> 16) | 0x40;
    return (uint16_t)((b + 0x7fff + ((b >> 16) & 1)) >> 16);
}

// ---- vector helpers ----------------------------------------------------

// Float max/min on vectors, with the scalar rules above. x86 MAXPS(a, b)
// returns b when the operands are equal (so for ±0) or either is NaN; the
// fix-ups below give +0 for Max of ±0 (AND of the bits; -0 for Min: OR) and
// return a when a is NaN.
#if HG_VBYTES == 64 && defined(__x86_64__)
#define DEFINE_VMAXMIN(F, VF, SFX, CAST)                                                       \
    static inline VF vmax_##F(VF a, VF b) {                                                    \
        __m512##SFX r = _mm512_max_##CAST((__m512##SFX)a, (__m512##SFX)b);                     \
        r = _mm512_mask_and_##CAST(r, _mm512_cmp_##CAST##_mask(a, b, _CMP_EQ_OQ), r, a);       \
        return (VF)_mm512_mask_mov_##CAST(r, _mm512_cmp_##CAST##_mask(a, a, _CMP_UNORD_Q), a); \
    }                                                                                          \
    static inline VF vmin_##F(VF a, VF b) {                                                    \
        __m512##SFX r = _mm512_min_##CAST((__m512##SFX)a, (__m512##SFX)b);                     \
        r = _mm512_mask_or_##CAST(r, _mm512_cmp_##CAST##_mask(a, b, _CMP_EQ_OQ), r, a);        \
        return (VF)_mm512_mask_mov_##CAST(r, _mm512_cmp_##CAST##_mask(a, a, _CMP_UNORD_Q), a); \
    }
DEFINE_VMAXMIN(f32, v_f32, , ps)
DEFINE_VMAXMIN(f64, v_f64, d, pd)
#elif HG_VBYTES == 32 && defined(__x86_64__)
#define DEFINE_VMAXMIN(F, VF, SFX, CAST)                                                     \
    static inline VF vmax_##F(VF a, VF b) {                                                  \
        __m256##SFX x = (__m256##SFX)a, y = (__m256##SFX)b;                                  \
        __m256##SFX r = _mm256_max_##CAST(x, y);                                             \
        r = _mm256_and_##CAST(r, _mm256_or_##CAST(x, _mm256_cmp_##CAST(x, y, _CMP_NEQ_UQ))); \
        return (VF)_mm256_blendv_##CAST(r, x, _mm256_cmp_##CAST(x, x, _CMP_UNORD_Q));        \
    }                                                                                        \
    static inline VF vmin_##F(VF a, VF b) {                                                  \
        __m256##SFX x = (__m256##SFX)a, y = (__m256##SFX)b;                                  \
        __m256##SFX r = _mm256_min_##CAST(x, y);                                             \
        r = _mm256_or_##CAST(r, _mm256_and_##CAST(x, _mm256_cmp_##CAST(x, y, _CMP_EQ_OQ)));  \
        return (VF)_mm256_blendv_##CAST(r, x, _mm256_cmp_##CAST(x, x, _CMP_UNORD_Q));        \
    }
DEFINE_VMAXMIN(f32, v_f32, , ps)
DEFINE_VMAXMIN(f64, v_f64, d, pd)
#else
// Portable: masks from vector comparisons.
#define DEFINE_VMAXMIN(F, VF, VI)                               \
    static inline VF vmax_##F(VF a, VF b) {                     \
        VI A = (VI)a, B = (VI)b;                                \
        VI gt = a > b, eq = a == b, an = a != a;                \
        VI r = (gt & A) | (~gt & B); /* b also when b is NaN */ \
        r = (eq & (A & B)) | (~eq & r);                         \
        return (VF)((an & A) | (~an & r));                      \
    }                                                           \
    static inline VF vmin_##F(VF a, VF b) {                     \
        VI A = (VI)a, B = (VI)b;                                \
        VI lt = a < b, eq = a == b, an = a != a;                \
        VI r = (lt & A) | (~lt & B);                            \
        r = (eq & (A | B)) | (~eq & r);                         \
        return (VF)((an & A) | (~an & r));                      \
    }
DEFINE_VMAXMIN(f32, v_f32, v_i32)
DEFINE_VMAXMIN(f64, v_f64, v_i64)
#endif

// bfloat16 <-> float32 on vectors: integer operations only.
static inline v_f32 vload_bf16(const unsigned char* p) {
    v_u16h h;
    LOAD(h, p);
    return (v_f32)(__builtin_convertvector(h, v_u32) << 16);
}
static inline void vstore_bf16(unsigned char* p, v_f32 f) {
    v_u32 b = (v_u32)f;
    v_u32 nan = (v_u32)((b & 0x7fffffff) > 0x7f800000);
    v_u32 r = (nan & ((b >> 16) | 0x40)) | (~nan & ((b + 0x7fff + ((b >> 16) & 1)) >> 16));
    v_u16h h = __builtin_convertvector(r, v_u16h);
    STORE(p, h);
}

// bfloat16 pairs in place: a v_u32 holds 2L bfloat16 values, the even ones
// in the low halves and the odd ones in the high halves. Each half widens to
// a float32 lane with one shift or mask, and no lanes cross, which makes
// this much cheaper than converting between vector widths.
static inline v_f32 bf16_even(v_u32 w) { return (v_f32)(w << 16); }
static inline v_f32 bf16_odd(v_u32 w) { return (v_f32)(w & 0xffff0000u); }
// Rounds f to bfloat16 in the high 16 bits of each lane (low bits garbage):
// add 0x7fff plus the lowest kept bit (ties to even); NaN keeps its top
// bits with the quiet bit set. The x86 versions use one float compare and a
// masked or (AVX-512) or blend (AVX2) where the portable one needs more.
#if HG_VBYTES == 64 && defined(__x86_64__)
static inline v_u32 bf16_round_hi(v_f32 f) {
    __m512i b = (__m512i)f;
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(b, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_add_epi32(b, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
    __mmask16 nan = _mm512_cmp_ps_mask((__m512)f, (__m512)f, _CMP_UNORD_Q);
    return (v_u32)_mm512_mask_or_epi32(r, nan, b, _mm512_set1_epi32(0x400000));
}
#elif HG_VBYTES == 32 && defined(__x86_64__)
static inline v_u32 bf16_round_hi(v_f32 f) {
    __m256i b = (__m256i)f;
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_add_epi32(b, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff)));
    __m256 nan = _mm256_cmp_ps((__m256)f, (__m256)f, _CMP_UNORD_Q);
    __m256 q = _mm256_or_ps((__m256)f, _mm256_castsi256_ps(_mm256_set1_epi32(0x400000)));
    return (v_u32)_mm256_blendv_ps(_mm256_castsi256_ps(r), q, nan);
}
#else
static inline v_u32 bf16_round_hi(v_f32 f) {
    v_u32 b = (v_u32)f;
    v_u32 nan = (v_u32)((b & 0x7fffffff) > 0x7f800000);
    return (nan & (b | 0x400000)) | (~nan & (b + 0x7fff + ((b >> 16) & 1)));
}
#endif
static inline v_u32 bf16_pack(v_f32 even, v_f32 odd) {
    return (bf16_round_hi(odd) & 0xffff0000u) | (bf16_round_hi(even) >> 16);
}

// The same rounding without the NaN case, valid only for the results of
// hardware + and * on widened bfloat16 operands: such a NaN is quiet and its
// low 16 bits are zero, so the rounding add cannot carry and keeps it as is.
// (Max/Min may return a signalling NaN operand unchanged: they need the
// full version.)
static inline v_u32 bf16_round_hi_arith(v_f32 f) {
    v_u32 b = (v_u32)f;
    return b + 0x7fff + ((b >> 16) & 1);
}
static inline v_u32 bf16_pack_arith(v_f32 even, v_f32 odd) {
    return (bf16_round_hi_arith(odd) & 0xffff0000u) | (bf16_round_hi_arith(even) >> 16);
}

// float16 <-> float32 on vectors: F16C where the level has it.
#if HG_F16C == 512
static inline v_f32 vload_f16(const unsigned char* p) {
    return (v_f32)_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)p));
}
static inline void vstore_f16(unsigned char* p, v_f32 f) {
    _mm256_storeu_si256((__m256i*)p, _mm512_cvtps_ph((__m512)f, _MM_FROUND_TO_NEAREST_INT));
}
#elif HG_F16C == 256
static inline v_f32 vload_f16(const unsigned char* p) {
    return (v_f32)_mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)p));
}
static inline void vstore_f16(unsigned char* p, v_f32 f) {
    _mm_storeu_si128((__m128i*)p, _mm256_cvtps_ph((__m256)f, _MM_FROUND_TO_NEAREST_INT));
}
#endif

// ---- elementwise loop templates ----------------------------------------

// dst = a OP b for a plain type T with vector type VT. VEXPR and SEXPR use
// x and y (the operands).
#define DEFINE_BINARY(NAME, T, VT, VEXPR, SEXPR)                                                    \
    static void NAME(unsigned char* d, const unsigned char* a, const unsigned char* b, size_t nb) { \
        size_t i = 0;                                                                               \
        UNROLL for (; i + sizeof(VT) <= nb; i += sizeof(VT)) {                                      \
            VT x, y, r;                                                                             \
            LOAD(x, a + i);                                                                         \
            LOAD(y, b + i);                                                                         \
            r = (VEXPR);                                                                            \
            STORE(d + i, r);                                                                        \
        }                                                                                           \
        for (; i < nb; i += sizeof(T)) {                                                            \
            T x, y, r;                                                                              \
            LOAD(x, a + i);                                                                         \
            LOAD(y, b + i);                                                                         \
            r = (SEXPR);                                                                            \
            STORE(d + i, r);                                                                        \
        }                                                                                           \
    }

// The integer ops for one integer type.
// Sums and products are computed unsigned so that they wrap (signed overflow
// is undefined in C); narrowing back to T is modulo 2^n with GCC and clang.
#define DEFINE_INT_OPS(T, VT, VU)                                                                   \
    DEFINE_BINARY(sum_##T, T, VT, (VT)((VU)x + (VU)y), (T)((uint64_t)x + (uint64_t)y))              \
    DEFINE_BINARY(prod_##T, T, VT, (VT)((VU)x * (VU)y), (T)((uint64_t)x * (uint64_t)y))             \
    DEFINE_BINARY(max_##T, T, VT, ((VT)(x > y) & x) | (~(VT)(x > y) & y), x > y ? x : y)            \
    DEFINE_BINARY(min_##T, T, VT, ((VT)(x < y) & x) | (~(VT)(x < y) & y), x < y ? x : y)            \
    DEFINE_BINARY(band_##T, T, VT, x& y, x& y)                                                      \
    DEFINE_BINARY(bor_##T, T, VT, x | y, x | y)                                                     \
    DEFINE_BINARY(bxor_##T, T, VT, x ^ y, x ^ y)                                                    \
    static int reduce_##T(int op, unsigned char* d, const unsigned char* a, const unsigned char* b, \
                          size_t nb) {                                                              \
        switch (op) {                                                                               \
            case HG_SUM:                                                                            \
            case HG_AVG:                                                                            \
            case HG_PREMULSUM: sum_##T(d, a, b, nb); return 1;                                      \
            case HG_PROD: prod_##T(d, a, b, nb); return 1;                                          \
            case HG_MAX: max_##T(d, a, b, nb); return 1;                                            \
            case HG_MIN: min_##T(d, a, b, nb); return 1;                                            \
            case HG_BAND: band_##T(d, a, b, nb); return 1;                                          \
            case HG_BOR: bor_##T(d, a, b, nb); return 1;                                            \
            case HG_BXOR: bxor_##T(d, a, b, nb); return 1;                                          \
        }                                                                                           \
        return 0;                                                                                   \
    }
DEFINE_INT_OPS(int8_t, v_i8, v_u8)
DEFINE_INT_OPS(uint8_t, v_u8, v_u8)
DEFINE_INT_OPS(int16_t, v_i16, v_u16)
DEFINE_INT_OPS(uint16_t, v_u16, v_u16)
DEFINE_INT_OPS(int32_t, v_i32, v_u32)
DEFINE_INT_OPS(uint32_t, v_u32, v_u32)
DEFINE_INT_OPS(int64_t, v_i64, v_u64)
DEFINE_INT_OPS(uint64_t, v_u64, v_u64)

// Bool: any non-zero byte is true; results are 0 or 1.
DEFINE_BINARY(or_bool, uint8_t, v_u8, (v_u8)((x | y) != 0) & 1, (x | y) != 0)
DEFINE_BINARY(and_bool, uint8_t, v_u8, (v_u8)((x != 0) & (y != 0)) & 1, x != 0 && y != 0)
DEFINE_BINARY(xor_bool, uint8_t, v_u8, (v_u8)((x != 0) ^ (y != 0)) & 1, (x != 0) != (y != 0))

static int reduce_bool(int op, unsigned char* d, const unsigned char* a, const unsigned char* b, size_t nb) {
    switch (op) {
        case HG_SUM:
        case HG_MAX:
        case HG_BOR: or_bool(d, a, b, nb); return 1;
        case HG_PROD:
        case HG_MIN:
        case HG_BAND: and_bool(d, a, b, nb); return 1;
        case HG_BXOR: xor_bool(d, a, b, nb); return 1;
    }
    return 0;
}

// The float ops for float and double.
#define DEFINE_FLOAT_OPS(F, T, VT)                                                                  \
    DEFINE_BINARY(sum_##F, T, VT, x + y, x + y)                                                     \
    DEFINE_BINARY(prod_##F, T, VT, x* y, x* y)                                                      \
    DEFINE_BINARY(max_##F, T, VT, vmax_##F(x, y), smax_##F(x, y))                                   \
    DEFINE_BINARY(min_##F, T, VT, vmin_##F(x, y), smin_##F(x, y))                                   \
    static int reduce_##F(int op, unsigned char* d, const unsigned char* a, const unsigned char* b, \
                          size_t nb) {                                                              \
        switch (op) {                                                                               \
            case HG_SUM:                                                                            \
            case HG_AVG:                                                                            \
            case HG_PREMULSUM: sum_##F(d, a, b, nb); return 1;                                      \
            case HG_PROD: prod_##F(d, a, b, nb); return 1;                                          \
            case HG_MAX: max_##F(d, a, b, nb); return 1;                                            \
            case HG_MIN: min_##F(d, a, b, nb); return 1;                                            \
        }                                                                                           \
        return 0;                                                                                   \
    }
DEFINE_FLOAT_OPS(f32, float, v_f32)
DEFINE_FLOAT_OPS(f64, double, v_f64)

// 16-bit floats: widen both operands to float32, apply the op, round once.
// The BINARY kernels below take (NAME, PACK, VEXPR, SEXPR): VEXPR and SEXPR
// combine float32 x and y (vector, scalar); PACK (ARITH or FULL) picks the
// bfloat16 rounding, and float16 ignores it.

// The scalar loop for what the vectors leave.
#define HALF_TAIL(H, SEXPR)                         \
    for (; i < nb; i += 2) {                        \
        uint16_t p, q, r;                           \
        LOAD(p, a + i);                             \
        LOAD(q, b + i);                             \
        float x = H##_to_f32(p), y = H##_to_f32(q); \
        r = f32_to_##H(SEXPR);                      \
        STORE(d + i, r);                            \
    }

#if HG_F16C
#define F16_BINARY(NAME, PACK, VEXPR, SEXPR)                                                        \
    static void NAME(unsigned char* d, const unsigned char* a, const unsigned char* b, size_t nb) { \
        size_t i = 0;                                                                               \
        UNROLL for (; i + HG_VBYTES / 2 <= nb; i += HG_VBYTES / 2) {                                \
            v_f32 x = vload_f16(a + i), y = vload_f16(b + i);                                       \
            vstore_f16(d + i, (VEXPR));                                                             \
        }                                                                                           \
        HALF_TAIL(f16, SEXPR)                                                                       \
    }
#else
// No F16C at this level: scalar conversions only.
#define F16_BINARY(NAME, PACK, VEXPR, SEXPR)                                                        \
    static void NAME(unsigned char* d, const unsigned char* a, const unsigned char* b, size_t nb) { \
        size_t i = 0;                                                                               \
        HALF_TAIL(f16, SEXPR)                                                                       \
    }
#endif

#define BF16_BINARY(NAME, PACK, VEXPR, SEXPR)                                                       \
    static void NAME(unsigned char* d, const unsigned char* a, const unsigned char* b, size_t nb) { \
        size_t i = 0;                                                                               \
        UNROLL for (; i + HG_VBYTES <= nb; i += HG_VBYTES) {                                        \
            v_u32 p, q, r;                                                                          \
            v_f32 x, y, even, odd;                                                                  \
            LOAD(p, a + i);                                                                         \
            LOAD(q, b + i);                                                                         \
            x = bf16_even(p), y = bf16_even(q);                                                     \
            even = (VEXPR);                                                                         \
            x = bf16_odd(p), y = bf16_odd(q);                                                       \
            odd = (VEXPR);                                                                          \
            r = bf16_pack_##PACK(even, odd);                                                        \
            STORE(d + i, r);                                                                        \
        }                                                                                           \
        HALF_TAIL(bf16, SEXPR)                                                                      \
    }
#define bf16_pack_ARITH bf16_pack_arith
#define bf16_pack_FULL bf16_pack

// dst(float32) = dst op widen(src(H)); nb counts src bytes. VEC16 says
// whether H has a vector load at this level.
#define DEFINE_FROM16(NAME, H, VEC16, VEXPR, SEXPR)                         \
    static void NAME(unsigned char* d, const unsigned char* s, size_t nb) { \
        size_t i = 0;                                                       \
        if (VEC16) {                                                        \
            UNROLL for (; i + HG_VBYTES / 2 <= nb; i += HG_VBYTES / 2) {    \
                v_f32 x, y = vload_##H(s + i), r;                           \
                LOAD(x, d + 2 * i);                                         \
                r = (VEXPR);                                                \
                STORE(d + 2 * i, r);                                        \
            }                                                               \
        }                                                                   \
        for (; i < nb; i += 2) {                                            \
            uint16_t q;                                                     \
            float x, y, r;                                                  \
            LOAD(q, s + i);                                                 \
            LOAD(x, d + 2 * i);                                             \
            y = H##_to_f32(q);                                              \
            r = (SEXPR);                                                    \
            STORE(d + 2 * i, r);                                            \
        }                                                                   \
    }

#if HG_F16C
#define HG_VEC_F16 1
#else
// Never called: the vector branches are compiled out by the constant 0.
#define HG_VEC_F16 0
static inline v_f32 vload_f16(const unsigned char* p) {
    (void)p;
    return (v_f32){0};
}
static inline void vstore_f16(unsigned char* p, v_f32 f) {
    (void)p;
    (void)f;
}
#endif

#define DEFINE_HALF_OPS(H, VEC16, BINARY)                                                           \
    BINARY(sum_##H, ARITH, x + y, x + y)                                                            \
    BINARY(prod_##H, ARITH, x* y, x* y)                                                             \
    BINARY(max_##H, FULL, vmax_f32(x, y), smax_f32(x, y))                                           \
    BINARY(min_##H, FULL, vmin_f32(x, y), smin_f32(x, y))                                           \
    DEFINE_FROM16(sum_from_##H, H, VEC16, x + y, x + y)                                             \
    DEFINE_FROM16(prod_from_##H, H, VEC16, x* y, x* y)                                              \
    DEFINE_FROM16(max_from_##H, H, VEC16, vmax_f32(x, y), smax_f32(x, y))                           \
    DEFINE_FROM16(min_from_##H, H, VEC16, vmin_f32(x, y), smin_f32(x, y))                           \
    static int reduce_##H(int op, unsigned char* d, const unsigned char* a, const unsigned char* b, \
                          size_t nb) {                                                              \
        switch (op) {                                                                               \
            case HG_SUM:                                                                            \
            case HG_AVG:                                                                            \
            case HG_PREMULSUM: sum_##H(d, a, b, nb); return 1;                                      \
            case HG_PROD: prod_##H(d, a, b, nb); return 1;                                          \
            case HG_MAX: max_##H(d, a, b, nb); return 1;                                            \
            case HG_MIN: min_##H(d, a, b, nb); return 1;                                            \
        }                                                                                           \
        return 0;                                                                                   \
    }                                                                                               \
    static int from_##H(int op, unsigned char* d, const unsigned char* s, size_t nb) {              \
        switch (op) {                                                                               \
            case HG_SUM:                                                                            \
            case HG_AVG:                                                                            \
            case HG_PREMULSUM: sum_from_##H(d, s, nb); return 1;                                    \
            case HG_PROD: prod_from_##H(d, s, nb); return 1;                                        \
            case HG_MAX: max_from_##H(d, s, nb); return 1;                                          \
            case HG_MIN: min_from_##H(d, s, nb); return 1;                                          \
        }                                                                                           \
        return 0;                                                                                   \
    }
DEFINE_HALF_OPS(f16, HG_VEC_F16, F16_BINARY)
DEFINE_HALF_OPS(bf16, 1, BF16_BINARY)

// ---- scale, divide, convert ----------------------------------------------

// dst = src * f in the type's own precision (16-bit types via float32).
#define DEFINE_MUL(NAME, T, VT)                                                  \
    static void NAME(unsigned char* d, const unsigned char* s, T f, size_t nb) { \
        size_t i = 0;                                                            \
        UNROLL for (; i + sizeof(VT) <= nb; i += sizeof(VT)) {                   \
            VT x;                                                                \
            LOAD(x, s + i);                                                      \
            x = x * f;                                                           \
            STORE(d + i, x);                                                     \
        }                                                                        \
        for (; i < nb; i += sizeof(T)) {                                         \
            T x;                                                                 \
            LOAD(x, s + i);                                                      \
            x = x * f;                                                           \
            STORE(d + i, x);                                                     \
        }                                                                        \
    }
#define DEFINE_DIV(NAME, T, VT)                                \
    static void NAME(unsigned char* d, T f, size_t nb) {       \
        size_t i = 0;                                          \
        UNROLL for (; i + sizeof(VT) <= nb; i += sizeof(VT)) { \
            VT x;                                              \
            LOAD(x, d + i);                                    \
            x = x / f;                                         \
            STORE(d + i, x);                                   \
        }                                                      \
        for (; i < nb; i += sizeof(T)) {                       \
            T x;                                               \
            LOAD(x, d + i);                                    \
            x = x / f;                                         \
            STORE(d + i, x);                                   \
        }                                                      \
    }
DEFINE_MUL(mul_f32, float, v_f32)
DEFINE_MUL(mul_f64, double, v_f64)
DEFINE_DIV(div_f32, float, v_f32)
DEFINE_DIV(div_f64, double, v_f64)

// 16-bit: dst = narrow(widen(src) OP f) with OP * or /.
#define DEFINE_HALF_SCALAR_OP(NAME, H, VEC16, OP)                                    \
    static void NAME(unsigned char* d, const unsigned char* s, float f, size_t nb) { \
        size_t i = 0;                                                                \
        if (VEC16) {                                                                 \
            UNROLL for (; i + HG_VBYTES / 2 <= nb; i += HG_VBYTES / 2) {             \
                vstore_##H(d + i, vload_##H(s + i) OP f);                            \
            }                                                                        \
        }                                                                            \
        for (; i < nb; i += 2) {                                                     \
            uint16_t p;                                                              \
            LOAD(p, s + i);                                                          \
            p = f32_to_##H(H##_to_f32(p) OP f);                                      \
            STORE(d + i, p);                                                         \
        }                                                                            \
    }
DEFINE_HALF_SCALAR_OP(mul_f16, f16, HG_VEC_F16, *)
DEFINE_HALF_SCALAR_OP(div_f16, f16, HG_VEC_F16, /)
DEFINE_HALF_SCALAR_OP(mul_bf16, bf16, 1, *)
DEFINE_HALF_SCALAR_OP(div_bf16, bf16, 1, /)

// Narrow float32 to H, or widen H to float32; nb counts src bytes.
#define DEFINE_CONVERT(H, VEC16)                                                  \
    static void narrow_##H(unsigned char* d, const unsigned char* s, size_t nb) { \
        size_t i = 0;                                                             \
        if (VEC16) {                                                              \
            UNROLL for (; i + HG_VBYTES <= nb; i += HG_VBYTES) {                  \
                v_f32 x;                                                          \
                LOAD(x, s + i);                                                   \
                vstore_##H(d + i / 2, x);                                         \
            }                                                                     \
        }                                                                         \
        for (; i < nb; i += 4) {                                                  \
            float x;                                                              \
            LOAD(x, s + i);                                                       \
            uint16_t h = f32_to_##H(x);                                           \
            STORE(d + i / 2, h);                                                  \
        }                                                                         \
    }                                                                             \
    static void widen_##H(unsigned char* d, const unsigned char* s, size_t nb) {  \
        size_t i = 0;                                                             \
        if (VEC16) {                                                              \
            UNROLL for (; i + HG_VBYTES / 2 <= nb; i += HG_VBYTES / 2) {          \
                v_f32 x = vload_##H(s + i);                                       \
                STORE(d + 2 * i, x);                                              \
            }                                                                     \
        }                                                                         \
        for (; i < nb; i += 2) {                                                  \
            uint16_t h;                                                           \
            LOAD(h, s + i);                                                       \
            float x = H##_to_f32(h);                                              \
            STORE(d + 2 * i, x);                                                  \
        }                                                                         \
    }
DEFINE_CONVERT(f16, HG_VEC_F16)
DEFINE_CONVERT(bf16, 1)

// ---- entry points --------------------------------------------------------

int HG_SFX(hg_reduce)(int dt, int op, void* dst, const void* a, const void* b, size_t nb) {
    unsigned char* d = dst;
    const unsigned char *x = a, *y = b;
    switch (dt) {
        case HG_INT8: return reduce_int8_t(op, d, x, y, nb);
        case HG_UINT8: return reduce_uint8_t(op, d, x, y, nb);
        case HG_INT16: return reduce_int16_t(op, d, x, y, nb);
        case HG_UINT16: return reduce_uint16_t(op, d, x, y, nb);
        case HG_INT32: return reduce_int32_t(op, d, x, y, nb);
        case HG_UINT32: return reduce_uint32_t(op, d, x, y, nb);
        case HG_INT64: return reduce_int64_t(op, d, x, y, nb);
        case HG_UINT64: return reduce_uint64_t(op, d, x, y, nb);
        case HG_FLOAT32: return reduce_f32(op, d, x, y, nb);
        case HG_FLOAT64: return reduce_f64(op, d, x, y, nb);
        case HG_FLOAT16: return reduce_f16(op, d, x, y, nb);
        case HG_BFLOAT16: return reduce_bf16(op, d, x, y, nb);
        case HG_BOOL: return reduce_bool(op, d, x, y, nb);
    }
    return 0;
}

int HG_SFX(hg_reduce_from16)(int dt, int op, void* dst, const void* src, size_t nb) {
    switch (dt) {
        case HG_FLOAT16: return from_f16(op, dst, src, nb);
        case HG_BFLOAT16: return from_bf16(op, dst, src, nb);
    }
    return 0;
}

int HG_SFX(hg_scale)(int dt, void* dst, const void* src, double factor, size_t nb) {
    switch (dt) {
        case HG_FLOAT32: mul_f32(dst, src, (float)factor, nb); return 1;
        case HG_FLOAT64: mul_f64(dst, src, factor, nb); return 1;
        case HG_FLOAT16: mul_f16(dst, src, (float)factor, nb); return 1;
        case HG_BFLOAT16: mul_bf16(dst, src, (float)factor, nb); return 1;
    }
    return 0;  // integers and bool: the Go kernel saturates and truncates
}

int HG_SFX(hg_divide)(int dt, void* buf, long n, size_t nb) {
    switch (dt) {
        case HG_FLOAT32: div_f32(buf, (float)n, nb); return 1;
        case HG_FLOAT64: div_f64(buf, (double)n, nb); return 1;
        case HG_FLOAT16: div_f16(buf, buf, (float)n, nb); return 1;
        case HG_BFLOAT16: div_bf16(buf, buf, (float)n, nb); return 1;
    }
    return 0;  // integers: Go's truncating division
}

int HG_SFX(hg_convert)(int from, int to, void* dst, const void* src, size_t nb) {
    if (from == HG_FLOAT32 && to == HG_FLOAT16) {
        narrow_f16(dst, src, nb);
        return 1;
    }
    if (from == HG_FLOAT32 && to == HG_BFLOAT16) {
        narrow_bf16(dst, src, nb);
        return 1;
    }
    if (from == HG_FLOAT16 && to == HG_FLOAT32) {
        widen_f16(dst, src, nb);
        return 1;
    }
    if (from == HG_BFLOAT16 && to == HG_FLOAT32) {
        widen_bf16(dst, src, nb);
        return 1;
    }
    return 0;
}
