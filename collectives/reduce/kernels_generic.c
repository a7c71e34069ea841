// Portable kernels: 16-byte vectors (SSE2 on x86-64, NEON on arm64).
#define HG_SFX(name) name##_generic
#define HG_VBYTES 16
#define HG_F16C 0
#include "kernels_impl.h"
