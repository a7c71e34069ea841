// Reduction into two destinations: a pipelined all_reduce writes its slice's
// result both into the caller's buffer and into a shared slot that peers
// copy from. Reducing a block of DUP_BLOCK bytes and copying it while it is
// still in L1 costs one pass over the inputs instead of two.
#include "kernels_dup.h"

#include <string.h>

#include "kernels.h"

// 8 KiB: the block's two inputs and its result (24 KiB) fit a 32-48 KiB L1
// data cache, and it is a multiple of every element size.
#define DUP_BLOCK 8192

int hg_reduce_dup_div(int isa, int dt, int op, void* dst, void* dup, const void* a, const void* b,
                      size_t nbytes, long divisor) {
    unsigned char *d = dst, *u = dup;
    const unsigned char *x = a, *y = b;
    // Integer division is left to Go: refuse before anything is written.
    if (divisor > 1 && dt != HG_FLOAT32 && dt != HG_FLOAT64 && dt != HG_FLOAT16 && dt != HG_BFLOAT16) {
        return 0;
    }
    for (size_t off = 0; off < nbytes; off += DUP_BLOCK) {
        size_t n = nbytes - off < DUP_BLOCK ? nbytes - off : DUP_BLOCK;
        if (!hg_reduce(isa, dt, op, d + off, x + off, y + off, n)) {
            // Only the first block can fail (the pair is checked there);
            // the Go side then reduces everything itself.
            return 0;
        }
        if (divisor > 1) {
            hg_divide(isa, dt, d + off, divisor, n);
        }
        memcpy(u + off, d + off, n);
    }
    return 1;
}
